"""Throttle state for fetchers and the frontier: the compacted topic at startup, the exchange after.

``load_latest_state`` reads the compacted ``throttle.state`` topic to its end. :class:`ThrottleView`
is what a fetcher or the frontier holds: it binds an exclusive, auto-delete queue to the throttle
fanout *first*, then reads the compacted topic, then consumes the queue, so no command falls in
between (the book orders commands by ``issued_at``, so reading both is harmless). After a lost
connection it reconnects and reads the compacted topic again for what it missed.

Settings: ``DUALPLANE_TOPIC_THROTTLE_STATE``, ``DUALPLANE_QUEUE_THROTTLE_EXCHANGE``, ``DUALPLANE_AMQP_*``,
``DUALPLANE_KAFKA_*`` and, for domains without a command, ``DUALPLANE_LIMIT_DOMAIN_CONCURRENCY`` and
``DUALPLANE_LIMIT_DOMAIN_DELAY_MS``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers import amqp
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.core.clock import utc_now
from dualplane.core.limits import Limits, OnChange
from dualplane.core.settings import KafkaSettings, Settings
from dualplane.data_plane.throttle.commands import AUTO, ThrottleCommand
from dualplane.data_plane.throttle.exceptions import BadThrottleCommand, ThrottleError
from dualplane.data_plane.throttle.limits import LimitsBook

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 10.0


def read_latest_commands(
    kafka: KafkaSettings, topic: str, *, timeout_s: float = 10.0
) -> dict[str, ThrottleCommand]:
    """The latest command per state key in ``topic`` (tombstones delete; unreadable values are skipped)."""
    latest: dict[str, ThrottleCommand] = {}
    for message in read_to_end(kafka, topic, timeout_s=timeout_s):
        key, value = message.key(), message.value()
        if key is None:
            continue
        if value is None:
            latest.pop(key.decode(), None)
            continue
        try:
            latest[key.decode()] = ThrottleCommand.from_avro(value)
        except BadThrottleCommand as error:
            log.warning("skipped %s[%s]@%s: %s", topic, message.partition(), message.offset(), error)
    return latest


def load_latest_state(
    kafka: KafkaSettings, topic: str, *, timeout_s: float = 10.0
) -> dict[str, ThrottleCommand]:
    """Domain -> the processor's latest command, read from the compacted ``topic`` to its end."""
    commands = read_latest_commands(kafka, topic, timeout_s=timeout_s).values()
    return {command.domain: command for command in commands if command.source == AUTO}


class ThrottleView:
    """Per-domain limits kept current from the throttle exchange: the fleet's
    :class:`~core.limits.LimitsSource`. Every public method is thread-safe."""

    def __init__(
        self,
        settings: Settings,
        *,
        on_change: OnChange | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.exchange = settings.queues.throttle_exchange
        self.topic = settings.topics.throttle_state
        self.book = LimitsBook(settings.limits.domain_concurrency, settings.limits.domain_delay_ms)
        self.listeners: list[OnChange] = [on_change] if on_change is not None else []
        self.clock = clock
        self.last_error: Exception | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="throttle-view", daemon=True)

    def start(self, timeout_s: float = 30.0) -> ThrottleView:
        """Subscribe and load the current state; :class:`ThrottleError` if that fails within ``timeout_s``.

        Returns only once the compacted topic was read, so a process restarted while a domain is
        throttled starts from that domain's limits, never from the defaults. Calling it again on a
        started view does nothing.
        """
        if self._ready.is_set():
            return self
        self._thread.start()
        if not self._ready.wait(timeout_s):
            self.close()
            raise ThrottleError(
                f"could not subscribe to throttle exchange {self.exchange!r} and read {self.topic!r} within "
                f"{timeout_s:.0f} s (last error: {self.last_error!r}); are RabbitMQ and Kafka up?"
            )
        return self

    def limits(self, domain: str) -> tuple[int, int, bool]:
        """``(concurrency, delay_ms, paused)`` for ``domain`` right now."""
        return self.details(domain).as_tuple()

    def details(self, domain: str) -> Limits:
        """The limits for ``domain`` with their source and reason."""
        with self._lock:
            return self.book.limits(domain, self.clock())

    def subscribe(self, on_change: OnChange) -> None:
        """Also call ``on_change`` (on the view's thread) whenever a command changes a domain's limits."""
        self.listeners.append(on_change)

    def domains(self) -> set[str]:
        """Domains with a known command (the processor's or an override), expired or not."""
        with self._lock:
            return self.book.domains()

    def apply(self, command: ThrottleCommand) -> bool:
        """Record a command (as if received); True when it changed something."""
        with self._lock:
            changed = self.book.apply(command)
            limits = self.book.limits(command.domain, self.clock())
        if changed:
            for listener in self.listeners:
                listener(command.domain, limits)
        return changed

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)

    def __enter__(self) -> ThrottleView:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # the view's thread: owns the RabbitMQ connection

    def _run(self) -> None:
        backoff_s = 0.5
        while not self._stop.is_set():
            try:
                self._session()
                backoff_s = 0.5
            except Exception as error:  # broker away, topic unreadable...: keep the limits, retry
                self.last_error = error
                log.warning("throttle view lost %s: %r; retrying in %.1f s", self.exchange, error, backoff_s)
                self._stop.wait(backoff_s)
                backoff_s = min(MAX_BACKOFF_S, backoff_s * 2)

    def _session(self) -> None:
        connection = amqp.connect(self.settings.amqp)
        try:
            channel = connection.channel()
            queue = self._subscribe(channel)
            for command in read_latest_commands(self.settings.kafka, self.topic).values():
                self.apply(command)
            channel.basic_consume(queue, self._on_message, auto_ack=True)
            self._ready.set()
            while not self._stop.is_set():
                connection.process_data_events(time_limit=0.2)
        finally:
            if connection.is_open:
                connection.close()

    def _subscribe(self, channel: BlockingChannel) -> str:
        channel.exchange_declare(self.exchange, "fanout", durable=True)
        # Exclusive and auto-delete: one queue per listening process, gone with its connection.
        queue = str(channel.queue_declare("", exclusive=True, auto_delete=True).method.queue)
        channel.queue_bind(queue, self.exchange)
        return queue

    def _on_message(self, channel: Any, method: Any, properties: pika.BasicProperties, body: bytes) -> None:
        try:
            command = ThrottleCommand.from_json(body)
        except BadThrottleCommand as error:
            log.warning("ignored a message on %s: %s", self.exchange, error)
            return
        self.apply(command)
