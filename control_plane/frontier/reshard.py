"""``dualplane reshard --to N``: change the number of frontier shards without losing or repeating work.

Run it with the fleet stopped (frontiers, fetchers and extractors route by the shard count, so all
of them restart with the new ``DUALPLANE_QUEUE_FRONTIER_SHARDS`` afterwards). In order:

1. **Check** that no frontier or fetcher is consuming (a live one would keep routing by the old count).
2. **Fence** every shard's changelog writer (its transactional id), so a frontier that is still
   running somewhere can no longer commit.
3. **Rewrite the changelog**: read every partition, plan the moves
   (:mod:`~control_plane.frontier.reshard_plan`) and append them in one Kafka transaction, all or
   nothing. Frontiers apply the appended records like any others, warm or from an empty directory.
4. **Move the queued messages** from the old shard queues to the new ones, each re-routed by the new
   count: discovery batches are split by the new shards, reports follow their domain, job rules
   go to every shard that does not know the job yet. Publishes and the old messages' acks commit
   together in AMQP transactions. A message its shard already handled (its ack was lost) goes
   unchanged to the old shard's number modulo the new count, where its handled record went, so
   that shard republishes its tasks instead of admitting them again.
5. **Announce every job to every shard**: a shard publishes a job's progress once it handles a
   message, and a shard whose sites all moved away would otherwise keep showing its old figures.
6. Delete the shard queues past the new count.

A crash anywhere leaves nothing half done that a second run would not finish: the changelog
transaction is atomic and a second plan finds only what is still out of place; queue moves are
transactional per batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pika

from dualplane.brokers import amqp
from dualplane.brokers.amqp.discovery import discovery_batches, shard_of_url
from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import (
    DiscoveredBatch,
    DiscoveredUrl,
    JobSpec,
    TaskReport,
    TaskReports,
    decode,
)
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.amqp.transactions import TxChannel
from dualplane.brokers.kafka import clients
from dualplane.control_plane.frontier.changelog import Changelog, ensure_changelog
from dualplane.control_plane.frontier.exceptions import ReshardRefused
from dualplane.control_plane.frontier.reshard_plan import Partition, Plan, handled_ids, job_rules, plan
from dualplane.core.settings import Settings

log = logging.getLogger(__name__)

MOVE_COMMIT_EVERY = 200  # messages moved per AMQP transaction
DRAIN_IDLE_S = 5.0  # a queue that delivers nothing for this long has nothing more to move


@dataclass
class ReshardReport:
    """What a reshard did, for the CLI (``--json``) and the log."""

    shards_before: int
    shards_after: int
    changelog_records: int = 0
    moved_state: dict[str, int] = field(default_factory=dict)
    messages_moved: int = 0
    messages_published: int = 0
    queues_deleted: list[str] = field(default_factory=list)


def reshard(settings: Settings, shards: int, progress: Callable[[str], None] = log.info) -> ReshardReport:
    """Change the fleet from ``settings.queues.frontier_shards`` shards to ``shards``."""
    before = settings.queues.frontier_shards
    old, new = (
        Topology(settings.queues),
        Topology(settings.queues.model_copy(update={"frontier_shards": shards})),
    )
    connection = amqp.connect(settings.amqp)
    try:
        old_queues = _existing_shard_queues(connection, old)
        _check_stopped(connection, old_queues, old)
        topic = settings.topics.frontier_changelog
        partitions = _partition_count(settings, topic, before)
        progress(f"fencing the changelog writers of {partitions} shard(s)")
        for index in range(partitions):
            _fence(settings, topic, index)
        ensure_changelog(settings.kafka, topic, shards)
        state = {index: Partition.of(_records(settings, topic, index)) for index in range(partitions)}
        moves = plan(state, shards)
        progress(f"rewriting the changelog: {moves.records} record(s) ({dict(moves.moved)})")
        _write(settings, topic, moves)
        report = ReshardReport(before, shards, moves.records, dict(moves.moved))
        channel = connection.channel()
        new.declare(channel)
        rules = job_rules(state)
        mover = _Mover(TxChannel(channel), new, handled_ids(state), set(rules))
        for queue in old_queues:
            moved = mover.drain(queue)
            progress(f"moved {moved} message(s) from {queue}")
        mover.announce(rules, range(shards))  # after the drains, which drop known jobs' rules
        report.messages_moved, report.messages_published = mover.moved, mover.published
        for queue in old_queues:
            # Quorum queues refuse delete-if-empty: check it is empty (the fleet is stopped) instead.
            if (
                queue not in new.frontier_queues
                and not channel.queue_declare(queue, passive=True).method.message_count
            ):
                channel.queue_delete(queue)
                report.queues_deleted.append(queue)
        return report
    finally:
        if connection.is_open:
            connection.close()


def _existing_shard_queues(connection: pika.BlockingConnection, topology: Topology) -> list[str]:
    """The shard queues that exist: the configured ones, and any left past them by a larger count."""
    queues = [queue for queue in topology.frontier_queues if _queue_exists(connection, queue)]
    index = topology.shards
    while _queue_exists(connection, topology.frontier_queue(index)):
        queues.append(topology.frontier_queue(index))
        index += 1
    return queues


def _queue_exists(connection: pika.BlockingConnection, name: str) -> bool:
    channel = connection.channel()
    try:
        channel.queue_declare(name, passive=True)
    except pika.exceptions.ChannelClosedByBroker:
        return False
    channel.close()
    return True


def _check_stopped(connection: pika.BlockingConnection, shard_queues: list[str], topology: Topology) -> None:
    lanes = [topology.lane_queue(lane) for lane in ("high", "normal", "bulk")]
    for queue in [*shard_queues, *lanes]:
        channel = connection.channel()
        try:
            consumers = channel.queue_declare(queue, passive=True).method.consumer_count
        except pika.exceptions.ChannelClosedByBroker:
            continue  # never declared: nobody consumes it
        channel.close()
        if consumers:
            raise ReshardRefused(
                f"{queue} has {consumers} consumer(s): stop every frontier, fetcher and extractor "
                "before resharding (they route by the shard count), then run reshard again"
            )


def _partition_count(settings: Settings, topic: str, shards: int) -> int:
    topics = clients.admin(settings.kafka).list_topics(topic, timeout=30).topics
    metadata = topics.get(topic)
    found = len(metadata.partitions) if metadata is not None and metadata.error is None else 0
    return max(found, shards)


def _fence(settings: Settings, topic: str, shard: int) -> None:
    """Become shard ``shard``'s changelog writer once: any frontier still holding it is fenced."""
    changelog = Changelog(settings.kafka, topic, shard)
    changelog.open()
    changelog.close()


def _records(settings: Settings, topic: str, shard: int) -> Iterator[tuple[str, object]]:
    for key, value, _offset in Changelog(settings.kafka, topic, shard).read(0):
        yield key, value


def _write(settings: Settings, topic: str, moves: Plan) -> None:
    """Append the plan to the changelog in one transaction over every partition it touches."""
    if not moves.records:
        return
    # One writer for all partitions; its own id, so a rerun fences an interrupted run.
    changelog = Changelog(settings.kafka, topic, 0, f"{settings.kafka.group_prefix}-frontier-reshard")
    changelog.open()
    try:
        changelog.write_partitions(moves.writes)
    finally:
        changelog.close()


class _Mover:
    """Moves the messages of old shard queues to the shards that own them under the new count."""

    def __init__(self, tx: TxChannel, topology: Topology, handled: set[str], jobs: set[str]) -> None:
        self.tx = tx
        self.topology = topology
        self.handled = handled
        self.jobs = jobs  # known to every new shard once the changelog is rewritten
        self.moved = 0
        self.published = 0

    def announce(self, rules: dict[str, str], shards: range) -> None:
        """Send every job's rules to ``shards``: each then publishes the job's progress afresh."""
        for index in shards:
            for job_id, spec in sorted(rules.items()):
                message = JobSpec.model_validate_json(spec)
                self.tx.publish(self.topology.discovery_exchange, str(index), message,
                                message_id=f"reshard-{job_id}-{index}")  # fmt: skip
                self.published += 1
        self.tx.commit()

    def drain(self, queue: str) -> int:
        """Move the ``queue``'s current messages (only those: some may be routed back to it).

        Shard queues have a single active consumer, which refuses ``basic.get``: the mover
        subscribes (the fleet is stopped, so it is the active one) and stops at the count.
        """
        channel = self.tx.channel
        count = int(channel.queue_declare(queue, passive=True).method.message_count)
        moved = 0
        channel.basic_qos(prefetch_count=MOVE_COMMIT_EVERY)
        for method, properties, body in channel.consume(queue, inactivity_timeout=DRAIN_IDLE_S):
            if method is None or moved == count:
                break
            for key, message_id, out in self._routes(properties.message_id, body, queue):
                self.tx.publish(self.topology.discovery_exchange, key, out, message_id=message_id,
                                headers=properties.headers)  # fmt: skip
                self.published += 1
            self.tx.ack(method.delivery_tag)
            moved += 1
            if moved % MOVE_COMMIT_EVERY == 0:
                self.tx.commit()
        self.tx.commit()
        channel.cancel()  # what it holds past the count goes back to the queue
        self.moved += moved
        return moved

    def _routes(self, message_id: str | None, body: bytes, queue: str) -> list[tuple[str, str | None, bytes]]:
        """(routing key, message id, body) for each message that replaces this one."""
        fallback = [(str(self._old_index(queue) % self.topology.shards), message_id, body)]
        try:
            message = decode(body)
        except MessageRejected:
            return fallback  # its shard's frontier dead-letters it with the reason
        if message_id in self.handled:
            return fallback  # where its handled record is: that shard republishes, it does not admit
        if isinstance(message, JobSpec):
            return self._job_rules(message, message_id)
        if isinstance(message, DiscoveredBatch | TaskReports):
            return self._split(message, message_id)
        if isinstance(message, TaskReport | DiscoveredUrl):
            key = self.topology.route(message.domain) if isinstance(message, TaskReport) else None
            return [(key or self._route_url(message.url), message_id, body)]
        return fallback

    def _job_rules(self, spec: JobSpec, message_id: str | None) -> list[tuple[str, str | None, bytes]]:
        if spec.job_id in self.jobs:
            return []  # every shard has the job's rules from the changelog
        self.jobs.add(spec.job_id)  # the first copy goes to every shard, ahead of its batches
        body = spec.encode()
        return [(str(index), f"{message_id}/{index}", body) for index in range(self.topology.shards)]

    def _split(
        self, batch: DiscoveredBatch | TaskReports, message_id: str | None
    ) -> list[tuple[str, str | None, bytes]]:
        if isinstance(batch, TaskReports):
            return self._split_reports(batch, message_id)
        parts = discovery_batches(
            self.topology, batch.job_id, batch.urls, depth=batch.depth, source_url=batch.source_url,
            trace_id=batch.trace_id, priority=batch.priority,
        )  # fmt: skip
        return [
            (key, f"{message_id}/{key}", part.model_copy(update={"seed": batch.seed}).encode())
            for key, part in parts
        ]

    def _split_reports(
        self, batch: TaskReports, message_id: str | None
    ) -> list[tuple[str, str | None, bytes]]:
        by_route: dict[str, list[TaskReport]] = {}
        for report in batch.reports:
            by_route.setdefault(self.topology.route(report.domain), []).append(report)
        return [
            (key, f"{message_id}/{key}", TaskReports(reports=tuple(reports)).encode())
            for key, reports in by_route.items()
        ]

    def _route_url(self, url: str) -> str:
        return str(shard_of_url(self.topology, url))

    def _old_index(self, queue: str) -> int:
        return int(queue.rpartition("-")[2])
