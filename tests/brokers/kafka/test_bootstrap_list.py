"""A bootstrap list whose first entries are a lost node: the clients reach the broker that is left.

The RabbitMQ side needed its own walk (brokers/amqp/nodes.py: pika gave up at the first name that did
not resolve). librdkafka resolves and connects to each bootstrap entry on its own broker thread, so
this only checks that it keeps doing so: a name that does not resolve (a removed container's) and a
port that refuses come first, the session's real broker last.
"""

from __future__ import annotations

import time

import pytest

from dualplane.brokers.kafka import clients
from dualplane.core.settings import Settings
from tests.support.cli import free_ports
from tests.support.factories import KafkaClientFactory, KafkaTopicFactory

pytestmark = pytest.mark.integration


def test_clients_reach_the_broker_behind_a_lost_name_and_a_refusing_port(
    settings: Settings, kafka_topics: KafkaTopicFactory
) -> None:
    (refusing,) = free_ports(1)
    survivors_last = f"lost-node.invalid:9092,127.0.0.1:{refusing},{settings.kafka.bootstrap_servers}"
    behind = settings.model_copy(
        update={"kafka": settings.kafka.model_copy(update={"bootstrap_servers": survivors_last})}
    )
    topic = kafka_topics.create("bootstrap")

    started = time.monotonic()
    assert clients.answers(behind.kafka, timeout_s=30)
    producer = clients.producer(behind.kafka)
    producer.produce(topic, key=b"k", value=b"reached")
    assert producer.flush(60) == 0, "the record never left the producer"
    consumer = KafkaClientFactory(behind)
    try:
        reader = consumer.consumer()
        reader.subscribe([topic])
        deadline, values = time.monotonic() + 60, list[bytes | None]()
        while not values and time.monotonic() < deadline:
            message = reader.poll(1.0)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    assert values == [b"reached"]
    print(f"\nbootstrap past a lost name and a refusing port: {time.monotonic() - started:.2f} s")
