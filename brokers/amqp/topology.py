"""The control plane's RabbitMQ topology, declared idempotently in this one place.

::

    discovery (direct) ─┬► <discovery>.shard-<i>  quorum, single active consumer: frontier shard i
    reports (direct) ───┘                         (routing key i: the shard of the URL's site)
    tasks (direct) ──────► <tasks>.high|normal|bulk  quorum lanes the fetchers consume
    <retry>.<tier> (fanout) ► <retry>.<tier>      quorum; the retry relay (brokers.amqp.retry_relay)
                                                   hands each task back to the tasks exchange, lane as
                                                   routing key, when due; what no relay holds expires
                                                   (message TTL = tier) and dead-letters back there
    dead (fanout) ───────► <dead>                 quorum; readable reason in the headers
    throttle (fanout) ───► one exclusive queue per listening process
    <tasks>.control (fanout) ► one exclusive queue per running fetcher (job cancels, answered)
    <permits>.<domain>                            per-domain permits (see brokers.amqp.permits)

Job progress is not here: frontier shards write it to a compacted Kafka topic
(``control_plane.frontier.jobs``), so finished jobs leave no queue behind.

Discovery and the fetchers' reports about a site go to the same shard queue, so one consumer (the
shard's active frontier) sees all of it, in order; a standby frontier of the shard takes over when
the active one's connection drops. Work queues are quorum queues (replicated, durable) with a
delivery limit, so a message that crashes its consumer over and over is dead-lettered by the
broker rather than looping forever.
Both ways out of a retry tier are at-least-once (the relay acks after the lane's confirm; the
broker's dead-lettering is the at-least-once strategy), so a delayed task cannot be dropped.
"""

from __future__ import annotations

from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp.lanes import PRIORITIES, Priority
from dualplane.core.settings import QueueSettings
from dualplane.core.web.domains import shard_of


class Topology:
    """Names and declarations of every exchange and queue, derived from ``QueueSettings``."""

    def __init__(self, queues: QueueSettings) -> None:
        self.queues = queues
        self.discovery_exchange = queues.discovery
        self.shards = queues.frontier_shards
        self.tasks_exchange = queues.crawl_tasks
        self.dead_exchange = queues.dead_letters
        self.dead_queue = queues.dead_letters
        self.reports_exchange = queues.reports
        self.throttle_exchange = queues.throttle_exchange
        # Cancels broadcast to every running fetcher, each on an exclusive queue of its own
        # (:mod:`brokers.amqp.fetch_control`).
        self.fetch_control_exchange = f"{queues.crawl_tasks}.control"
        self.tiers = queues.tiers()

    def frontier_queue(self, shard: int) -> str:
        """The queue frontier shard ``shard`` consumes: its sites' discovery and task reports."""
        return f"{self.queues.discovery}.shard-{shard}"

    @property
    def frontier_queues(self) -> list[str]:
        return [self.frontier_queue(shard) for shard in range(self.shards)]

    def shard_of(self, domain: str) -> int:
        """The shard owning ``domain`` (a politeness key, ``host[:port]``)."""
        return shard_of(domain, self.shards)

    def route(self, domain: str) -> str:
        """The routing key, on the discovery and reports exchanges, of news about ``domain``."""
        return str(self.shard_of(domain))

    def lane_queue(self, priority: Priority) -> str:
        return f"{self.queues.crawl_tasks}.{priority}"

    def tier_name(self, tier: str) -> str:
        """Exchange and queue of one retry tier (they share the name)."""
        return f"{self.queues.retry_prefix}.{tier}"

    def permits_queue(self, domain: str) -> str:
        return f"{self.queues.permits_prefix}.{domain}"

    def control_queues(self) -> list[str]:
        """The queues an operator watches: lanes, retry tiers, dead letters and frontier shards (not
        the per-domain permit queues, one per domain ever crawled)."""
        lanes = [self.lane_queue(priority) for priority in PRIORITIES]
        tiers = [self.tier_name(tier) for tier, _ in self.tiers]
        return [*lanes, *tiers, self.dead_queue, *self.frontier_queues]

    @classmethod
    def declared(cls, queues: QueueSettings, channel: BlockingChannel) -> Topology:
        """The topology of ``queues``, declared on ``channel``: what a client that publishes to it (a
        job's submitter, the dead-letter tools) needs first."""
        topology = cls(queues)
        topology.declare(channel)
        return topology

    def declare(self, channel: BlockingChannel) -> None:
        """Declare everything; safe to call from every process on every start."""
        for exchange, kind in (
            (self.discovery_exchange, "direct"),
            (self.tasks_exchange, "direct"),
            (self.dead_exchange, "fanout"),
            (self.reports_exchange, "direct"),
            (self.throttle_exchange, "fanout"),
            (self.fetch_control_exchange, "fanout"),
        ):
            channel.exchange_declare(exchange, kind, durable=True)
        self._queue(channel, self.dead_queue, self.dead_exchange, "", dead_letter=False)
        for shard in range(self.shards):
            queue = self.frontier_queue(shard)
            self._queue(channel, queue, self.discovery_exchange, str(shard), single_active=True)
            channel.queue_bind(queue, self.reports_exchange, routing_key=str(shard))
        for priority in PRIORITIES:
            self._queue(channel, self.lane_queue(priority), self.tasks_exchange, priority)
        for tier, ttl_ms in self.tiers:
            self._declare_tier(channel, self.tier_name(tier), ttl_ms)

    def _queue(
        self,
        channel: BlockingChannel,
        name: str,
        exchange: str,
        routing_key: str,
        *,
        single_active: bool = False,
        dead_letter: bool = True,
    ) -> None:
        arguments = self._quorum()
        if dead_letter:
            arguments["x-delivery-limit"] = self.queues.delivery_limit
            arguments["x-dead-letter-exchange"] = self.dead_exchange
        if single_active:
            arguments["x-single-active-consumer"] = True
        channel.queue_declare(name, durable=True, arguments=arguments)
        channel.queue_bind(name, exchange, routing_key=routing_key)

    def _quorum(self) -> dict[str, Any]:
        """A quorum queue's type and, when set, its member count (RabbitMQ caps it at the node count)."""
        arguments: dict[str, Any] = {"x-queue-type": "quorum"}
        if self.queues.quorum_members:
            arguments["x-quorum-initial-group-size"] = self.queues.quorum_members
        return arguments

    def _declare_tier(self, channel: BlockingChannel, name: str, ttl_ms: int) -> None:
        channel.exchange_declare(name, "fanout", durable=True)
        arguments = {
            **self._quorum(),
            "x-message-ttl": ttl_ms,
            # No dead-letter routing key: an expired task keeps its lane as routing key.
            "x-dead-letter-exchange": self.tasks_exchange,
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",  # required by at-least-once dead-lettering
        }
        channel.queue_declare(name, durable=True, arguments=arguments)
        channel.queue_bind(name, name)
