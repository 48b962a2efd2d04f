"""A frontier shard's changelog: its state in a compacted Kafka topic, so any machine can take over.

Why Kafka and not only the local SQLite: a shard must survive the loss of its machine, not just of
its process, and Kafka is where the platform's durable, replicated state already lives (the same
design as Faust's and Kafka Streams' changelog topics). Partition ``i`` of the topic is shard ``i``'s.

Records, written by one Kafka transaction per commit of the shard:

- ``<table>/<key>`` -> the row as JSON (``None``, a tombstone, when deleted): jobs, domains, tasks,
  the backlog and handled messages (:meth:`~control_plane.frontier.store.FrontierState.changes`);
  compaction keeps the newest row per key.
- ``seen/<bucket>/<id>`` -> the 16-byte seen-set keys a commit added, grouped by the site bucket of
  their URLs (``core.web.domains``): never deleted, so the seen set can be rebuilt whole.

Fencing: every frontier of shard ``i`` uses the transactional id ``<group prefix>-frontier-<i>``.
:meth:`Changelog.open` is called when a frontier becomes the shard's active consumer: it fences the
previous one (its open transaction is aborted, any later write of it refused), after which the
partition is read to its end, so the new owner starts from everything the old one committed.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import watermarks
from dualplane.control_plane.frontier.exceptions import ChangelogUnavailable
from dualplane.core.settings import KafkaSettings

log = logging.getLogger(__name__)

CALL_BOUND_S = 60.0  # our own bound on librdkafka's transactional calls (see clients.within)
READ_IDLE_S = 30.0
SEEN_PREFIX = "seen/"

Record = tuple[str, Any]
"""A changelog record before encoding: its key and its value (a row dict, packed keys, or None)."""


def ensure_changelog(kafka: KafkaSettings, topic: str, shards: int) -> None:
    """Create the compacted changelog topic with a partition per shard, or add the missing ones."""
    clients.ensure_topics(kafka, [topic], partitions=shards, config={"cleanup.policy": "compact"})
    admin = clients.admin(kafka)
    metadata = admin.list_topics(topic, timeout=30).topics[topic]
    if len(metadata.partitions) < shards:
        futures = admin.create_partitions([NewPartitions(topic, shards)], request_timeout=30)
        for future in futures.values():
            try:
                future.result()
            except KafkaException as error:  # another frontier added them first
                if error.args[0].code() != KafkaError.INVALID_PARTITIONS:
                    raise


class Changelog:
    """Shard ``shard``'s partition of ``topic``: written transactionally, read back to its end."""

    def __init__(
        self, kafka: KafkaSettings, topic: str, shard: int, transactional_id: str | None = None
    ) -> None:
        self.kafka = kafka
        self.topic = topic
        self.shard = shard
        self.transactional_id = transactional_id or f"{kafka.group_prefix}-frontier-{shard}"
        self.producer: Producer | None = None

    def open(self) -> None:
        """Become the only writer of the shard: fences (and aborts) any previous writer."""
        self.close()
        config = {"transactional.id": self.transactional_id, "linger.ms": 0, "transaction.timeout.ms": 60_000}
        producer = clients.producer(self.kafka, **config)
        try:
            clients.within(lambda: producer.init_transactions(30), CALL_BOUND_S, "init_transactions")
        except Exception as error:
            raise ChangelogUnavailable(f"cannot open {self.topic}[{self.shard}]: {error}") from error
        self.producer = producer

    def write(self, records: list[Record], also: Sequence[tuple[str, str, bytes]] = ()) -> int:
        """Write ``records`` in one transaction, with ``also``'s (topic, key, value) records to the
        shard's partition of their topics; the offset of the last changelog record once committed
        (-1: none)."""
        return self.write_partitions({self.shard: records}, also).get(self.shard, -1)

    def write_partitions(
        self, writes: dict[int, list[Record]], also: Sequence[tuple[str, str, bytes]] = ()
    ) -> dict[int, int]:
        """Write each partition's records (and ``also``, as :meth:`write`) in one transaction;
        the offset of the last changelog record per partition once committed."""
        producer = self.producer
        if producer is None:
            raise ChangelogUnavailable("the changelog is not open: this frontier is not the shard's owner")
        offsets: dict[int, int] = {}

        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is None and message.topic() == self.topic:
                offsets[message.partition()] = max(message.offset(), offsets.get(message.partition(), -1))

        try:
            producer.begin_transaction()
            for partition, records in writes.items():
                for key, value in records:
                    producer.produce(
                        self.topic, encode(value), key.encode(), partition=partition, on_delivery=delivered
                    )
            for topic, key, value in also:
                producer.produce(topic, value, key.encode(), partition=self.shard)
            clients.within(lambda: producer.commit_transaction(30), CALL_BOUND_S, "commit_transaction")
        except Exception as error:
            # Fenced (another frontier took the shard over), Kafka away, or a wedged call: this
            # process must stop acting for the shard; what it did since its last commit is discarded.
            self.producer = None
            raise ChangelogUnavailable(f"{self.topic}[{self.shard}]: {error}") from error
        return offsets

    def read(self, from_offset: int) -> Iterator[tuple[str, Any, int]]:
        """Every record from ``from_offset`` to the partition's current end: (key, value, offset)."""
        consumer = clients.consumer(
            self.kafka, f"{self.kafka.group_prefix}-changelog-reader-{uuid.uuid4().hex[:6]}"
        )
        partition = TopicPartition(self.topic, self.shard)
        try:
            low, high = _watermarks(consumer, partition)
            start = max(from_offset, low)
            if start >= high:
                return
            consumer.assign([TopicPartition(self.topic, self.shard, start)])
            last_progress = time.monotonic()
            while consumer.position([partition])[0].offset < high:
                message = consumer.poll(0.5)
                if message is None or message.error() is not None:
                    if time.monotonic() - last_progress > READ_IDLE_S:
                        raise ChangelogUnavailable(
                            f"{self.topic}[{self.shard}]: no progress reading at {start}"
                        )
                    continue
                last_progress = time.monotonic()
                key = (message.key() or b"").decode()
                yield key, decode(key, message.value()), int(message.offset() or 0)
        finally:
            clients.close_within(consumer)

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(5)
            self.producer = None


def _watermarks(consumer: Consumer, partition: TopicPartition) -> tuple[int, int]:
    """The partition's offsets; a topic just created may be unknown to the broker, or leaderless, for
    a moment (seen starting a compose stack: _UNKNOWN_PARTITION), so that is waited out, up to
    READ_IDLE_S (:func:`~brokers.kafka.reader.watermarks`)."""
    try:
        return watermarks(consumer, partition, READ_IDLE_S, ask_timeout_s=10)
    except KafkaException as error:
        raise ChangelogUnavailable(
            f"cannot read {partition.topic}[{partition.partition}]: {error}"
        ) from error


def encode(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    return json.dumps(value, separators=(",", ":")).encode()


def decode(key: str, value: bytes | None) -> Any:
    if value is None or key.startswith(SEEN_PREFIX):
        return value
    return json.loads(value)


def seen_records(keys_by_bucket: dict[int, list[bytes]]) -> list[Record]:
    """The seen-set keys a commit added, one record per site bucket."""
    return [
        (f"{SEEN_PREFIX}{bucket}/{uuid.uuid4().hex}", b"".join(keys))
        for bucket, keys in keys_by_bucket.items()
    ]
