"""Consumer lag: how far a consumer group is behind the end of a topic.

Work is only finished when every stage has caught up: the frontier can be idle while the extractor
still has pages to read (whose links will start new tasks). ``crawl --wait``, the demo and the
tests therefore also wait for the extractor's lag on ``pages.raw`` to reach zero.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from dualplane.brokers.kafka import clients
from dualplane.core.settings import KafkaSettings, Settings


def consumer_lag(kafka: KafkaSettings, group_id: str, topic: str, *, timeout_s: float = 10.0) -> int:
    """Messages of ``topic`` the group has not committed yet (0 when the topic does not exist)."""
    # A consumer that never subscribes does not join the group: it only reads its committed offsets.
    consumer = clients.consumer(kafka, group_id)
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return 0
        partitions = [TopicPartition(topic, p) for p in metadata.partitions]
        committed = _committed(consumer, partitions, timeout_s)
        lag = 0
        for tp in partitions:
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout_s)
            done = committed.get(tp.partition, -1)
            lag += max(0, high - (done if done >= 0 else low))
        return lag
    finally:
        consumer.close()


# The group's coordinator moves or is loading right after a broker restart, or when the group's
# offsets partition has just been created: these answers mean "ask again shortly", not "failed".
_COORDINATOR_BUSY = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)
RETRY_PAUSE_S = 0.2


def _committed(consumer: Consumer, partitions: list[TopicPartition], timeout_s: float) -> dict[int, int]:
    """The group's committed offset per partition, asking again while the coordinator is busy."""
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = max(0.1, deadline - time.monotonic())
        try:
            return {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=remaining)}
        except KafkaException as error:
            busy = (
                error.args
                and isinstance(error.args[0], KafkaError)
                and (error.args[0].code() in _COORDINATOR_BUSY or error.args[0].retriable())
            )
            if not busy or time.monotonic() + RETRY_PAUSE_S >= deadline:
                raise
            time.sleep(RETRY_PAUSE_S)


def extractor_lag(settings: Settings) -> int:
    """Raw pages the extractors have not finished (committed) yet."""
    return consumer_lag(settings.kafka, f"{settings.kafka.group_prefix}-extractor", settings.topics.pages_raw)
