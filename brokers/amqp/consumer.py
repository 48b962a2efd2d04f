"""A RabbitMQ consumer that loses nothing, survives broker restarts and never stalls on bad input.

- Manual acks only. A handler either returns (the delivery is acked), settles the delivery
  itself, or calls :meth:`Delivery.defer` and settles later from any thread through
  :meth:`ControlConsumer.call_threadsafe` (the fetcher does, once Kafka has the page).
- A body that cannot be decoded (malformed, unknown kind or version, invalid fields) goes to the
  dead letters at once with the reason; retrying could not help.
- A handler that raises is retried by requeueing; on the ``handler_max_failures``-th failure of
  the same message (counted by the quorum queue's ``x-delivery-count``) the message goes to the
  dead letters with the exception as its reason, and the consumer moves on.
- When the connection drops, the consumer reconnects with capped exponential backoff and
  redeclares the topology; unacked messages were requeued by the broker, so none is lost.
- ``transactional=True`` batches instead of confirming each publish: the channel is in AMQP
  transaction mode (:mod:`brokers.amqp.transactions`), handlers publish and settle as usual,
  and after each pass over what arrived (and ``on_tick``) the consumer calls ``before_commit`` and
  commits it all at once: a handler's outputs and its input's ack stick together or not at all.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import AMQPError
from pika.spec import Basic

from dualplane.brokers import amqp
from dualplane.brokers.amqp.dead_letters import dead_letter
from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import ControlMessage, decode
from dualplane.brokers.amqp.publisher import publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.amqp.transactions import TxChannel
from dualplane.core import metrics
from dualplane.core.logs import page_context, page_of
from dualplane.core.settings import Settings

log = logging.getLogger(__name__)

Handler = Callable[["Delivery"], None]


@dataclass
class Delivery:
    """One message handed to a handler, with the means to settle it exactly once."""

    queue: str
    method: Basic.Deliver
    properties: pika.BasicProperties
    body: bytes
    message: Any
    consumer: ControlConsumer
    generation: int
    settled: bool = False
    deferred: bool = False

    def defer(self) -> None:
        """Keep the message unacked after the handler returns; settle it later."""
        self.deferred = True

    def ack(self) -> None:
        self.consumer._settle(self, lambda ch: ch.basic_ack(self.method.delivery_tag))

    def requeue(self) -> None:
        self.consumer._settle(self, lambda ch: ch.basic_nack(self.method.delivery_tag, requeue=True))

    def dead_letter(self, reason: str) -> None:
        """Publish to the dead letters with ``reason`` (confirmed), then ack."""
        consumer = self.consumer

        def send(channel: BlockingChannel) -> None:
            consumer._publish_dead_letter(channel, self, reason)
            channel.basic_ack(self.method.delivery_tag)

        consumer._settle(self, send)


@dataclass
class QueueBinding:
    """What the consumer does with one queue: the handler, the message kinds it accepts, and
    optionally its own prefetch (unacked messages from this queue at most)."""

    handler: Handler
    accepts: tuple[type[ControlMessage], ...]
    prefetch: int | None = None


@dataclass
class ControlConsumer:
    """Consume ``bindings`` with prefetch ``prefetch`` until :meth:`stop` is called."""

    settings: Settings
    bindings: Mapping[str, QueueBinding]
    prefetch: int = 50
    on_connected: Callable[[ControlConsumer], None] | None = None
    on_tick: Callable[[ControlConsumer], None] | None = None
    name: str = "consumer"
    transactional: bool = False
    # Called before each commit of a transactional consumer: where state that must be durable
    # before the acks (the frontier's changelog) is written, and outputs added. False: hold the
    # commit (nothing is sent; what is unacked stays with us) and ask again after the next pass.
    before_commit: Callable[[ControlConsumer], bool] | None = None
    # Graceful stop: once stopped, the consumer cancels its subscriptions (nothing new arrives) and
    # goes on handling callbacks, ticks and commits until ``drained`` says nothing is in flight, or
    # ``drain_timeout_s`` passes; then it closes (the broker requeues whatever is still unacked).
    drained: Callable[[ControlConsumer], bool] | None = None
    drain_timeout_s: float = 20.0
    # A transactional consumer commits at most this often (0: after every pass). Each commit is a
    # round trip, and work that trickles in one message per pass made one commit per message.
    commit_interval_s: float = 0.0
    topology: Topology = field(init=False)
    connection: pika.BlockingConnection | None = field(init=False, default=None)
    channel: BlockingChannel | None = field(init=False, default=None)
    tx: TxChannel | None = field(init=False, default=None)
    generation: int = field(init=False, default=0)
    paused: set[str] = field(init=False, default_factory=set)
    _stop: threading.Event = field(init=False, default_factory=threading.Event)
    _tags: dict[str, str] = field(init=False, default_factory=dict)
    _committed_at: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.topology = Topology(self.settings.queues)
        self._consumed = {queue: metrics.AMQP_CONSUMED.labels(queue) for queue in self.bindings}

    def run(self) -> None:
        """Consume until stopped, reconnecting after every connection loss."""
        backoff_s = 0.5
        while not self._stop.is_set():
            try:
                self._consume_once()
                backoff_s = 0.5
            except (AMQPError, OSError) as error:
                log.warning("%s: connection lost (%s); reconnecting in %.1f s", self.name, error, backoff_s)
                self._stop.wait(backoff_s)
                backoff_s = min(backoff_s * 2, 10.0)
            except Exception:
                # A bug in a hook must not kill the worker: unacked messages go back to the
                # queue when the connection closes, and we start over on a fresh connection.
                log.exception("%s: unexpected error; reconnecting in %.1f s", self.name, backoff_s)
                self._stop.wait(backoff_s)
                backoff_s = min(backoff_s * 2, 10.0)
            finally:
                self._close()

    def stop(self) -> None:
        self._stop.set()

    def pause(self, queue: str) -> None:
        """Stop receiving from ``queue`` (backpressure); unacked messages stay with us."""
        tag = self._tags.pop(queue, None)
        self.paused.add(queue)
        if tag is not None and self.channel is not None:
            self.channel.basic_cancel(tag)
            log.info("%s: paused %s", self.name, queue)

    def resume(self, queue: str) -> None:
        self.paused.discard(queue)
        if queue not in self._tags and self.channel is not None:
            self._subscribe(self.channel, queue)
            log.info("%s: resumed %s", self.name, queue)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def call_threadsafe(self, generation: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the connection's thread, unless that connection is gone.

        After a reconnect, deliveries of the old connection were requeued by the broker; their
        delivery tags mean nothing on the new channel, so late callbacks for them are dropped.
        """
        connection = self.connection
        if connection is None or generation != self.generation or not connection.is_open:
            return

        def guarded() -> None:
            if generation == self.generation:
                callback()

        try:
            connection.add_callback_threadsafe(guarded)
        except AMQPError:
            log.info("%s: connection closed before a callback could run; the broker requeues", self.name)

    def _consume_once(self) -> None:
        self.connection = amqp.connect(self.settings.amqp)
        self.generation += 1
        channel = self.connection.channel()
        self.topology.declare(channel)
        if self.transactional:
            self.tx = TxChannel(channel)
        else:
            channel.confirm_delivery()
        channel.basic_qos(prefetch_count=self.prefetch)
        self.channel = channel
        self._tags = {}
        if self.on_connected is not None:
            self.on_connected(self)
        for queue in self.bindings:
            if queue not in self.paused:
                self._subscribe(channel, queue)
        log.info("%s: consuming %s", self.name, ", ".join(self.bindings))
        while not self._stop.is_set():
            self._pass()
        if self.drained is not None:
            self._drain(channel)

    def _pass(self, *, force_commit: bool = False) -> None:
        assert self.connection is not None
        self.connection.process_data_events(time_limit=0.2)
        if self.on_tick is not None:
            self.on_tick(self)
        now = time.monotonic()
        if self.tx is not None and (force_commit or now - self._committed_at >= self.commit_interval_s):
            self._committed_at = now
            self.commit()

    def _drain(self, channel: BlockingChannel) -> None:
        """Stop pulling, then finish what is in flight (bounded by ``drain_timeout_s``)."""
        assert self.drained is not None
        for tag in self._tags.values():
            channel.basic_cancel(tag)
        self._tags = {}
        deadline = time.monotonic() + self.drain_timeout_s
        started = time.monotonic()
        while not self.drained(self) and time.monotonic() < deadline:
            self._pass()
        self._pass(force_commit=True)  # settle and commit what the last callbacks did
        outcome = "finished" if self.drained(self) else "left to the broker (requeued)"
        log.info("%s: stopped pulling; in-flight work %s after %.1f s", self.name, outcome,
                 time.monotonic() - started)  # fmt: skip

    def publish(
        self, exchange: str, routing_key: str, message: ControlMessage | bytes, **options: Any
    ) -> None:
        """Publish on the consumer's channel: confirmed at once, or with the next commit."""
        assert self.channel is not None
        if self.tx is not None:
            self.tx.publish(exchange, routing_key, message, **options)
        else:
            publish(self.channel, exchange, routing_key, message, **options)

    def commit(self) -> None:
        """Send what handlers and ticks did since the last commit (transactional consumers).

        Messages the broker returned after the previous commit (their queue was deleted under us)
        are published again first, after declaring the topology anew.
        """
        tx, channel = self.tx, self.channel
        if tx is None or channel is None:
            return
        returned = tx.take_returned()
        if returned:
            self.topology.declare(channel)
            for message in returned:
                headers = message.properties.headers
                tx.publish(message.exchange, message.routing_key, message.body, headers=headers,
                           message_id=message.properties.message_id)  # fmt: skip
        if self.before_commit is not None and not self.before_commit(self):
            return
        tx.commit()

    def _subscribe(self, channel: BlockingChannel, queue: str) -> None:
        prefetch = self.bindings[queue].prefetch
        if prefetch is not None:  # applies to consumers created after it on this channel
            channel.basic_qos(prefetch_count=prefetch)
        self._tags[queue] = channel.basic_consume(queue, functools.partial(self._on_message, queue))
        if prefetch is not None:
            channel.basic_qos(prefetch_count=self.prefetch)

    def _close(self) -> None:
        connection, self.connection, self.channel, self.tx = self.connection, None, None, None
        if connection is not None and connection.is_open:
            with contextlib.suppress(AMQPError):
                connection.close()

    def _on_message(
        self,
        queue: str,
        channel: BlockingChannel,
        method: Basic.Deliver,
        properties: pika.BasicProperties,
        body: bytes,
    ) -> None:
        binding = self.bindings[queue]
        self._consumed[queue].inc()
        delivery = Delivery(queue, method, properties, body, None, self, self.generation)
        try:
            delivery.message = decode(body, binding.accepts)
        except MessageRejected as rejected:
            log.warning("%s: dead-lettering a message from %s: %s", self.name, queue, rejected.reason)
            delivery.dead_letter(rejected.reason)
            return
        try:
            with page_context(**page_of(delivery.message)):
                binding.handler(delivery)
        except MessageRejected as rejected:
            if not delivery.settled:
                delivery.dead_letter(rejected.reason)
            return
        except (AMQPError, OSError):
            raise  # the connection is broken: reconnect; the broker requeues what was unacked
        except Exception as error:
            self._handler_failed(delivery, error)
            return
        if not delivery.settled and not delivery.deferred:
            delivery.ack()

    def handler_failed(self, delivery: Delivery, error: Exception) -> None:
        """A handler raised on ``delivery``: requeue it, or dead-letter it on its last chance."""
        self._handler_failed(delivery, error)

    def _handler_failed(self, delivery: Delivery, error: Exception) -> None:
        failures = int((delivery.properties.headers or {}).get("x-delivery-count", 0)) + 1
        limit = self.settings.queues.handler_max_failures
        description = f"{type(error).__name__}: {error}"
        if delivery.settled:
            log.exception("%s: handler failed after settling a message: %s", self.name, description)
        elif failures >= limit:
            log.error("%s: handler failed %d times on one message; dead-lettering", self.name, failures)
            delivery.dead_letter(f"handler failed {failures} times; last error: {description}")
        else:
            log.warning("%s: handler failed (%d/%d): %s; requeueing", self.name, failures, limit, description)
            delivery.requeue()

    def _settle(self, delivery: Delivery, action: Callable[[BlockingChannel], None]) -> None:
        if delivery.settled:
            raise RuntimeError(f"delivery {delivery.method.delivery_tag} from {delivery.queue} settled twice")
        if delivery.generation != self.generation or self.channel is None:
            delivery.settled = True  # its connection is gone; the broker has requeued it
            return
        action(self.channel)
        delivery.settled = True
        if self.tx is not None:
            self.tx.mark()

    def _publish_dead_letter(self, channel: BlockingChannel, delivery: Delivery, reason: str) -> None:
        metrics.DEAD_LETTERS.labels(self.name, "control").inc()
        dead_letter(
            channel,
            self.topology,
            delivery.body,
            delivery.properties,
            reason=reason,
            source_queue=delivery.queue,
            exchange=delivery.method.exchange,
            routing_key=delivery.method.routing_key,
        )


def wait_for(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.1) -> bool:
    """Poll ``predicate`` until true or ``timeout_s`` passes; True if it became true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()
