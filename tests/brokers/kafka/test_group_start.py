"""A group that starts at "latest" resumes from a fixed start, even if its first owner never committed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from dualplane.brokers.kafka.group_start import pin_group_start
from tests.support.factories import KafkaClientFactory, KafkaTopicFactory

pytestmark = pytest.mark.integration


def _produce(kafka: KafkaClientFactory, topic: str, values: list[bytes]) -> None:
    producer = kafka.producer()
    for value in values:
        producer.produce(topic, value, key=value)
    assert producer.flush(30) == 0


def _read(consumer: Consumer, topic: str, expected: int, timeout_s: float = 30.0) -> list[bytes]:
    """Subscribe and read ``expected`` values (or whatever came within the timeout)."""
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(values) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value())
    return values


def test_owners_after_an_uncommitted_one_read_from_the_pinned_start(
    kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic, group = kafka_topics.create("events", partitions=2), kafka.group()
    _produce(kafka, topic, [f"history-{i}".encode() for i in range(6)])

    assert pin_group_start(kafka.settings.kafka, group, topic) == 2
    assert pin_group_start(kafka.settings.kafka, group, topic) == 0, "a pinned start must not move"

    new = [f"new-{i}".encode() for i in range(8)]
    _produce(kafka, topic, new)
    first = kafka.consumer(group, **{"auto.offset.reset": "latest", "enable.auto.commit": False})
    assert sorted(_read(first, topic, len(new))) == sorted(new), "the start is where it was pinned"
    first.close()  # dies without committing
    later = kafka.consumer(group, **{"auto.offset.reset": "latest", "enable.auto.commit": False})
    assert sorted(_read(later, topic, len(new))) == sorted(new), "the next owner must read them again"


def test_a_group_with_a_live_member_is_left_as_it_is(
    kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic, group = kafka_topics.create("events", partitions=1), kafka.group()
    member = kafka.consumer(group, **{"auto.offset.reset": "latest", "enable.auto.commit": False})
    member.subscribe([topic])
    deadline = time.monotonic() + 30
    while not member.assignment():
        assert time.monotonic() < deadline, "the member never got its partition"
        member.poll(0.2)

    assert pin_group_start(kafka.settings.kafka, group, topic) == 0
    committed = member.committed([TopicPartition(topic, 0)], timeout=10)
    assert committed[0].offset < 0, "a live group's offsets are its members' to commit"
