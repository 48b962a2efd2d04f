"""Reading a topic from its beginning (or a set of offsets) to the end it had when we started.

The bounded read that replay, ``records export``, the demo's checks and the tests all need:
the end offsets are fixed first, so the read always terminates even while producers write.
"""

from __future__ import annotations

from collections.abc import Iterator

from confluent_kafka import Message, TopicPartition

from data_plane import kafka_clients
from dualplane.settings import KafkaSettings


def read_to_end(kafka: KafkaSettings, topic: str, *, timeout_s: float = 10.0) -> Iterator[Message]:
    """Every message of ``topic`` up to the end offsets at the time of the call, in partition order."""
    consumer = kafka_clients.consumer(kafka, f"{kafka.group_prefix}-reader", **{"enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        ends: dict[int, int] = {}
        starts = []
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            if high > low:
                ends[partition] = high
                starts.append(TopicPartition(topic, partition, low))
        consumer.assign(starts)
        while ends:
            message = consumer.poll(timeout_s)
            if message is None:
                raise TimeoutError(
                    f"no message from {topic} within {timeout_s:.0f} s; partitions left {sorted(ends)}"
                )
            if message.error() is not None:
                continue  # partition EOF and transient errors; the end offsets decide when we stop
            partition, offset = message.partition(), message.offset()
            if partition in ends and offset is not None:
                if offset + 1 >= ends[partition]:
                    del ends[partition]
                yield message
    finally:
        consumer.close()
