"""Kafka smoke tests: admin topic creation, idempotent acks=all produce, group consume and commit."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, Message
from confluent_kafka.admin import ConfigResource

from dualplane.brokers.kafka import clients
from tests.support.factories import KafkaClientFactory, KafkaTopicFactory

pytestmark = pytest.mark.integration


def _consume(consumer, expected: int, timeout_s: float = 30.0) -> list[Message]:
    messages: list[Message] = []
    deadline = time.monotonic() + timeout_s
    while len(messages) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None or message.error().code() == KafkaError._PARTITION_EOF
        if message.error() is None:
            messages.append(message)
    return messages


def test_admin_creates_topic_with_partitions_and_config(kafka_topics: KafkaTopicFactory) -> None:
    name = kafka_topics.create("admin", partitions=3, config={"retention.ms": "3600000"})

    metadata = kafka_topics.admin.list_topics(name, timeout=10).topics[name]
    assert len(metadata.partitions) == 3
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    config = kafka_topics.admin.describe_configs([resource])[resource].result(timeout=10)
    assert config["retention.ms"].value == "3600000"


def test_idempotent_producer_round_trip_through_consumer_group(
    kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic = kafka_topics.create("roundtrip", partitions=3)
    producer = kafka.producer()
    assert clients.producer_config(kafka.settings.kafka)["enable.idempotence"] is True
    assert clients.producer_config(kafka.settings.kafka)["acks"] == "all"
    errors: list[object] = []
    sent = {f"value-{i}".encode() for i in range(200)}
    for i, value in enumerate(sorted(sent)):
        producer.produce(
            topic, value, key=f"key-{i % 7}".encode(), on_delivery=lambda e, _m: errors.append(e)
        )
    assert producer.flush(30) == 0
    assert errors == [None] * len(sent)

    group = kafka.group()
    consumer = kafka.consumer(group)
    consumer.subscribe([topic])
    received = _consume(consumer, len(sent))
    consumer.commit(asynchronous=False)

    assert {m.value() for m in received} == sent
    committed = consumer.committed(consumer.assignment(), timeout=10)
    assert sum(tp.offset for tp in committed) == len(sent)


def test_keys_keep_their_order_within_a_partition(
    kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic = kafka_topics.create("order", partitions=3)
    producer = kafka.producer()
    for i in range(50):
        producer.produce(topic, str(i).encode(), key=b"same-url")
    producer.flush(30)

    consumer = kafka.consumer()
    consumer.subscribe([topic])
    values = [int(m.value()) for m in _consume(consumer, 50)]

    assert values == list(range(50))
