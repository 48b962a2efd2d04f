"""Publishing throttle commands on the RabbitMQ throttle fanout from one thread that owns the connection.

pika's ``BlockingConnection`` is not thread-safe and the Faust agent must never wait on RabbitMQ,
so :meth:`CommandPublisher.submit` only hands the command to a dedicated thread. That thread
publishes with publisher confirms, keeps the connection's heartbeats going while idle, and when
RabbitMQ is away keeps the newest unsent command per domain (older ones are superseded: commands
are absolute limits, not deltas) and retries with capped backoff. Nothing is lost that matters:
the compacted state topic holds every domain's latest command regardless.

Publishing is not ``mandatory``: a fanout with no listener bound yet is normal (fetchers that start
later read the compacted topic).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pika
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import AMQPError

from dualplane.brokers import amqp
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.core.settings import AmqpSettings
from dualplane.data_plane.throttle.commands import ThrottleCommand

log = logging.getLogger(__name__)

Connect = Callable[[], pika.BlockingConnection]
IDLE_TICK_S = 1.0
MAX_BACKOFF_S = 10.0


@dataclass
class PublisherStats:
    published: int = 0
    failures: int = 0
    pending: int = 0
    last_error: str = ""


class CommandPublisher:
    """Fire-and-forget for the caller; confirmed, retried publishing on its own thread."""

    def __init__(self, exchange: str, connect: Connect) -> None:
        self.exchange = exchange
        self._connect = connect
        self._pending: dict[str, ThrottleCommand] = {}
        self._cond = threading.Condition()
        self._stopping = False
        self._deadline = float("inf")
        self._in_flight = 0
        self.stats = PublisherStats()
        self._thread = threading.Thread(target=self._run, name="throttle-publisher", daemon=True)

    @classmethod
    def from_settings(cls, amqp_settings: AmqpSettings, exchange: str) -> CommandPublisher:
        return cls(exchange, lambda: amqp.connect(amqp_settings))

    def start(self) -> None:
        self._thread.start()

    def submit(self, command: ThrottleCommand) -> None:
        """Queue ``command`` for publishing; supersedes an unsent command for the same domain."""
        with self._cond:
            self._pending.pop(command.domain, None)
            self._pending[command.domain] = command
            self.stats.pending = len(self._pending)
            self._cond.notify()

    def wait_idle(self, timeout_s: float) -> bool:
        """True once every submitted command was published (for tests and shutdown)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._pending or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def close(self, timeout_s: float = 10.0) -> None:
        """Publish what is pending (for up to ``timeout_s``), then close the connection."""
        with self._cond:
            self._stopping = True
            self._deadline = time.monotonic() + timeout_s
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout_s + 5)

    # publisher thread

    def _run(self) -> None:
        connection: pika.BlockingConnection | None = None
        channel: BlockingChannel | None = None
        backoff_s = 0.5
        while True:
            batch = self._take()
            if batch is None:
                break
            try:
                if connection is None or not connection.is_open:
                    connection, channel = self._open()
                assert channel is not None and connection is not None
                self._publish(channel, batch)
                connection.process_data_events(0)  # heartbeats while idle
                backoff_s = 0.5
            except (AMQPError, OSError) as error:
                self._failed(batch, error)
                self._close(connection)
                connection = None
                self._sleep(backoff_s)
                backoff_s = min(MAX_BACKOFF_S, backoff_s * 2)
        self._close(connection)

    def _take(self) -> list[ThrottleCommand] | None:
        """The next batch to publish (may be empty: an idle tick); ``None`` when it is time to stop."""
        with self._cond:
            if not self._pending and not self._stopping:
                self._cond.wait(IDLE_TICK_S)
            if self._stopping and (not self._pending or time.monotonic() > self._deadline):
                return None
            batch = list(self._pending.values())
            self._pending.clear()
            self._in_flight = len(batch)
            return batch

    def _open(self) -> tuple[pika.BlockingConnection, BlockingChannel]:
        connection = self._connect()
        channel = confirmed_channel(connection)
        channel.exchange_declare(self.exchange, "fanout", durable=True)  # as brokers.amqp.topology does
        return connection, channel

    def _publish(self, channel: BlockingChannel, batch: list[ThrottleCommand]) -> None:
        while batch:
            publish(channel, self.exchange, "", batch[0], mandatory=False)
            batch.pop(0)
            with self._cond:
                self._in_flight -= 1
                self.stats.published += 1
                self.stats.pending = len(self._pending)
                self._cond.notify_all()

    def _failed(self, unsent: list[ThrottleCommand], error: Exception) -> None:
        log.warning(
            "could not publish %d throttle command(s) to %s: %r; retrying", len(unsent), self.exchange, error
        )
        with self._cond:
            for command in unsent:
                self._pending.setdefault(command.domain, command)  # a newer one, if any, wins
            self._in_flight = 0
            self.stats.failures += 1
            self.stats.last_error = repr(error)
            self.stats.pending = len(self._pending)

    def _sleep(self, seconds: float) -> None:
        with self._cond:
            if not self._stopping:
                self._cond.wait(seconds)

    @staticmethod
    def _close(connection: pika.BlockingConnection | None) -> None:
        if connection is not None and connection.is_open:
            with contextlib.suppress(AMQPError, OSError):  # a broken connection: nothing left to save
                connection.close()
