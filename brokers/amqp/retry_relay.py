"""The retry relay: hands the tasks of the delay tiers back to their lanes when they are due.

A deferred or retried task goes to a delay tier (``<retry>.<tier>``) with its due time in a header
(:func:`due_headers`). The relay consumes every tier, holds each task unacked until that time, then
publishes it to the tasks exchange with its lane as routing key, with a publisher confirm, and only
then acks it: a relay that dies holding tasks loses none (the broker hands them to another relay,
or to this one once it is back, which sends them on at once if they are due by then). A task can
reach its lane twice (confirmed, then the relay died before its ack): fetching is at-least-once.

Why not leave it to the broker: the tiers are also quorum queues with a TTL that dead-letter to the
tasks exchange (``Topology``), but RabbitMQ's at-least-once dead-letter worker can stop handing tasks
on for good after the queue's leader moved off a lost node (3.10.8: docs/multi-machine.md), and a
crawl then waits for tasks no lane holds. The TTL stays as the fallback for tasks no relay holds
(no fetcher running, or more tasks in a tier than the relays' prefetch).

Each fetcher process runs one relay (``dualplane.services``): the tiers' consumers are as many and
as replaceable as the fetchers, and a fleet that fetches always has one.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pika

from dualplane.brokers.amqp.consumer import ControlConsumer, Delivery, QueueBinding
from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.brokers.amqp.topology import Topology
from dualplane.core import metrics
from dualplane.core.settings import Settings

log = logging.getLogger(__name__)

DUE_HEADER = "dualplane-due-ms"  # epoch milliseconds at which the task goes back to its lane
# Tasks a relay holds per tier at most. Beyond it they wait in the tier (and expire there by the
# broker's TTL if no relay takes them in time): 1,000 tasks of about 1 KiB each, per tier.
PREFETCH = 1000
# RabbitMQ's own headers, which say where a message was dead-lettered from: a task the relay hands on
# did not die, and ``publisher.enqueued_at`` would read its lane wait from them.
BROKER_HEADERS = ("x-death", "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason",
                  "x-last-death-exchange", "x-last-death-queue", "x-last-death-reason")  # fmt: skip


def due_headers(ttl_ms: int, *, now_s: float | None = None) -> dict[str, int]:
    """The headers of a task sent to a tier of ``ttl_ms``: due that long from now."""
    now_ms = int((time.time() if now_s is None else now_s) * 1000)
    return {DUE_HEADER: now_ms + ttl_ms}


def wait_s(properties: pika.BasicProperties, ttl_ms: int, *, now_s: float | None = None) -> float:
    """How long a task that just arrived from a tier of ``ttl_ms`` still waits (0 when due).

    From its due header, else its publish timestamp plus the TTL (a task deferred without one);
    never more than the TTL, so a publisher's clock ahead of ours cannot hold a task longer."""
    now_s = time.time() if now_s is None else now_s
    headers = properties.headers or {}
    due = headers.get(DUE_HEADER)
    if isinstance(due, int) and not isinstance(due, bool):
        due_s = due / 1000
    elif isinstance(properties.timestamp, int) and properties.timestamp > 0:
        due_s = properties.timestamp + ttl_ms / 1000
    else:
        due_s = now_s + ttl_ms / 1000
    return min(max(due_s - now_s, 0.0), ttl_ms / 1000)


def lane_properties(properties: pika.BasicProperties) -> pika.BasicProperties:
    """The properties a relayed task enters its lane with: the tier's, stamped now (the lane's wait
    is measured from there), without the due header or the broker's dead-letter headers."""
    headers: Mapping[str, Any] = properties.headers or {}
    dropped = {DUE_HEADER, *BROKER_HEADERS}
    kept = {name: value for name, value in headers.items() if name not in dropped}
    return pika.BasicProperties(
        delivery_mode=pika.DeliveryMode.Persistent,
        content_type=properties.content_type,
        headers=kept or None,
        type=properties.type,
        message_id=properties.message_id,
        timestamp=int(time.time()),
    )


@dataclass(order=True)
class _Held:
    release_at: float  # monotonic
    sequence: int
    delivery: Delivery = field(compare=False)


class RetryRelay:
    """Consumes every delay tier and sends each task to its lane when due; ``run`` / ``stop``."""

    def __init__(self, settings: Settings, *, prefetch: int = PREFETCH) -> None:
        self.topology = Topology(settings.queues)
        self.ttl_ms = {self.topology.tier_name(tier): ttl_ms for tier, ttl_ms in self.topology.tiers}
        self.held: list[_Held] = []
        self.relayed = 0
        self._sequence = 0
        binding = QueueBinding(self._on_task, (CrawlTask,), prefetch=prefetch)
        self.consumer = ControlConsumer(
            settings,
            dict.fromkeys(self.ttl_ms, binding),
            prefetch=prefetch,
            on_connected=self._on_connected,
            on_tick=self._on_tick,
            name="retry-relay",
        )

    def run(self) -> None:
        self.consumer.run()

    def stop(self) -> None:
        """Stop consuming; tasks still held go back to their tier (the broker requeues them)."""
        self.consumer.stop()

    # the consumer's connection thread

    def _on_connected(self, consumer: ControlConsumer) -> None:
        self.held.clear()  # their deliveries belonged to the previous connection: requeued

    def _on_task(self, delivery: Delivery) -> None:
        delivery.defer()
        release_at = time.monotonic() + wait_s(delivery.properties, self.ttl_ms[delivery.queue])
        self._sequence += 1
        heapq.heappush(self.held, _Held(release_at, self._sequence, delivery))

    def _on_tick(self, consumer: ControlConsumer) -> None:
        now = time.monotonic()
        while self.held and self.held[0].release_at <= now:
            self._relay(consumer, heapq.heappop(self.held).delivery)

    def _relay(self, consumer: ControlConsumer, delivery: Delivery) -> None:
        """Publish to the lane and wait for the broker's confirm, then ack: an ``UnroutableError`` or
        ``NackError`` (a lane missing, a broker refusing) reconnects the consumer, which declares the
        topology again, and the task, unacked, comes back from its tier."""
        assert consumer.channel is not None
        task: CrawlTask = delivery.message
        consumer.channel.basic_publish(
            self.topology.tasks_exchange,
            task.priority,
            delivery.body,
            properties=lane_properties(delivery.properties),
            mandatory=True,
        )
        delivery.ack()
        self.relayed += 1
        metrics.RETRY_RELAYED.labels(delivery.queue).inc()
