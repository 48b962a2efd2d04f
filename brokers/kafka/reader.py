"""Reading a topic from its beginning (or a set of offsets) to the end it had when we started.

The bounded read that replay, ``records export``, the demo's checks and the tests all need:
the end offsets are fixed first, so the read always terminates even while producers write.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from dualplane.brokers.kafka import clients
from dualplane.core.settings import KafkaSettings

# What a partition answers for a while after its topic was created (no leader elected yet, or not yet
# known to the broker asked: seen starting a compose stack).
LEADERLESS = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    }
)
LEADERLESS_RETRY_S = 0.2


def read_to_end(
    kafka: KafkaSettings,
    topic: str,
    *,
    timeout_s: float = 10.0,
    partitions: Collection[int] | None = None,
    since_ms: int | None = None,
) -> Iterator[Message]:
    """Every message of ``topic`` (or of its ``partitions``) up to the end offsets at the time of the call;
    with ``since_ms``, only from the first message timestamped then or later (epoch milliseconds).

    Only committed messages of transactional producers are returned (``read_committed``), so an open
    transaction holds the read back until it ends; ``timeout_s`` is how long it may make no progress.
    """
    consumer = clients.consumer(kafka, f"{kafka.group_prefix}-reader", **{"enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        ends: dict[int, int] = {}
        starts = []
        for partition in metadata.partitions:
            if partitions is not None and partition not in partitions:
                continue
            low, high = watermarks(consumer, TopicPartition(topic, partition), timeout_s)
            if since_ms is not None:
                (found,) = consumer.offsets_for_times([TopicPartition(topic, partition, since_ms)], timeout_s)
                low = high if found.offset < 0 else max(low, found.offset)  # -1: nothing that recent
            if high > low:
                ends[partition] = high
                starts.append(TopicPartition(topic, partition, low))
        consumer.assign(starts)
        deadline = time.monotonic() + timeout_s
        while ends:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                partition, offset = message.partition(), message.offset()
                if partition in ends and offset is not None and offset < ends[partition]:
                    deadline = time.monotonic() + timeout_s
                    yield message
            # The position skips transaction markers, which occupy offsets but are never delivered:
            # a partition is read once its position reaches the end offset fixed at the start.
            for position in consumer.position([TopicPartition(topic, p) for p in ends]):
                if position.offset >= ends[position.partition]:
                    del ends[position.partition]
            if ends and time.monotonic() > deadline:
                raise TimeoutError(
                    f"{topic}: no progress for {timeout_s:.0f} s; partitions left {sorted(ends)}"
                )
    finally:
        consumer.close()


def watermarks(
    consumer: Consumer, partition: TopicPartition, timeout_s: float, *, ask_timeout_s: float | None = None
) -> tuple[int, int]:
    """The partition's low and high offsets. A partition whose leader is not elected yet (a topic
    created a moment ago, a broker restarting) is asked again until ``timeout_s``: a fetcher started
    right after the profiles topic was made had failed on "Not leader for partition". Each ask waits
    ``ask_timeout_s`` (default ``timeout_s``) for an answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(partition, timeout=ask_timeout_s or timeout_s)
            return int(low), int(high)
        except KafkaException as error:
            code = error.args[0].code() if error.args else None
            if code not in LEADERLESS or time.monotonic() > deadline:
                raise
        time.sleep(LEADERLESS_RETRY_S)


def committed_values(
    kafka: KafkaSettings, topic: str, group: str, *, from_beginning: bool, follow: bool, commit: bool = False
) -> Iterator[bytes]:
    """The values of ``topic`` as producers commit them: up to the current end (``follow=False``, as
    :func:`read_to_end`), or tailed by consumer group ``group`` until the caller stops iterating
    (``commit``: its progress is committed, so a restart resumes there)."""
    if not follow:
        for committed in read_to_end(kafka, topic):
            yield committed.value() or b""
        return
    reset = "earliest" if from_beginning else "latest"
    consumer = clients.consumer(kafka, group, **{"auto.offset.reset": reset, "enable.auto.commit": commit})
    try:
        consumer.subscribe([topic])
        while True:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"reading {topic} failed: {error}")
                continue
            yield message.value() or b""
    finally:
        clients.close_within(consumer)
