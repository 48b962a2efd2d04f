"""The compacted schema topic on a real Kafka: publish, read back, decode data only the topic describes."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import ConfigResource

from dualplane.brokers.kafka.schema_topic import entry_value, load_schemas_from_topic, publish_schemas
from dualplane.core.settings import Settings
from dualplane.schemas import SchemaRegistry, decode, encode
from dualplane.schemas.exceptions import SchemaTopicError, UnknownSchema
from dualplane.schemas.registry import default_registry
from tests.support.factories import KafkaClientFactory, KafkaTopicFactory, unique_name

pytestmark = pytest.mark.integration

NEWER_SCHEMA = {
    "type": "record",
    "name": "ProbeEvent",
    "namespace": "dualplane",
    "doc": "A schema only a newer producer knows.",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "seen_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "score", "type": ["null", "double"], "default": None},
    ],
}


def new_topic_name(kafka_topics: KafkaTopicFactory) -> str:
    """A unique name the factory deletes afterwards, for a topic publish_schemas itself creates."""
    name = unique_name("schemas")
    kafka_topics.created.append(name)
    return name


def cleanup_policy(kafka_topics: KafkaTopicFactory, topic: str) -> str:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    config = kafka_topics.admin.describe_configs([resource])[resource].result(timeout=10)
    return str(config["cleanup.policy"].value)


def test_publish_creates_a_compacted_topic_keyed_by_fingerprint(
    settings: Settings, kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic = new_topic_name(kafka_topics)

    count = publish_schemas(settings.kafka, topic)

    assert count == len(default_registry())
    assert cleanup_policy(kafka_topics, topic) == "compact"
    consumer = kafka.consumer()
    consumer.subscribe([topic])
    entries: dict[str, object] = {}
    while len(entries) < count:
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        entries[message.key().decode()] = json.loads(message.value())
    for schema in default_registry().all():
        assert entries[schema.fingerprint_hex] == {
            "name": schema.name,
            "version": schema.version,
            "fingerprint": schema.fingerprint_hex,
            "schema": schema.definition,
        }


def test_a_consumer_decodes_data_whose_schema_it_learned_only_from_the_topic(
    settings: Settings, kafka_topics: KafkaTopicFactory
) -> None:
    topic = new_topic_name(kafka_topics)
    newer_producer = SchemaRegistry.from_package()
    newer_producer.register("probe_event", 1, NEWER_SCHEMA)
    assert publish_schemas(settings.kafka, topic, registry=newer_producer) == len(newer_producer)
    data = encode(
        "probe_event", {"id": "p-1", "seen_at": 1_715_938_212_345, "score": 0.5}, registry=newer_producer
    )
    consumer = SchemaRegistry.from_package()  # a fresh process that has never heard of probe_event
    with pytest.raises(UnknownSchema, match="not known to this process"):
        decode(data, registry=consumer)

    assert load_schemas_from_topic(settings.kafka, topic, 30, registry=consumer) == 1

    decoded = decode(data, registry=consumer)
    assert (decoded.name, decoded.version, decoded.record["id"], decoded.record["score"]) == (
        "probe_event",
        1,
        "p-1",
        0.5,
    )
    assert load_schemas_from_topic(settings.kafka, topic, 30, registry=consumer) == 0  # nothing new


def test_an_empty_registry_learns_every_published_schema(
    settings: Settings, kafka_topics: KafkaTopicFactory
) -> None:
    topic = new_topic_name(kafka_topics)
    publish_schemas(settings.kafka, topic)
    publish_schemas(settings.kafka, topic)  # publishing twice is harmless
    empty = SchemaRegistry()

    assert load_schemas_from_topic(settings.kafka, topic, 30, registry=empty) == len(default_registry())
    assert [(s.name, s.version, s.fingerprint) for s in empty.all()] == [
        (s.name, s.version, s.fingerprint) for s in default_registry().all()
    ]


def test_malformed_entries_are_skipped_and_the_rest_is_loaded(
    settings: Settings, kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic = kafka_topics.create("schemas", config={"cleanup.policy": "compact"})
    page_record = default_registry().get("page_record", 1)
    producer = kafka.producer()
    producer.produce(topic, b"not json", key=b"0000000000000001")
    producer.produce(topic, entry_value(page_record), key=b"0123456789abcdef")  # key lies
    producer.produce(topic, None, key=b"0000000000000002")  # tombstone
    producer.produce(topic, entry_value(page_record), key=page_record.fingerprint_hex.encode())
    assert producer.flush(30) == 0
    empty = SchemaRegistry()

    assert load_schemas_from_topic(settings.kafka, topic, 30, registry=empty) == 1
    assert empty.get("page_record").fingerprint == page_record.fingerprint


def test_a_missing_topic_loads_nothing(settings: Settings) -> None:
    assert load_schemas_from_topic(settings.kafka, unique_name("absent"), 10, registry=SchemaRegistry()) == 0


def test_publishing_to_a_topic_that_is_not_compacted_is_refused(
    settings: Settings, kafka_topics: KafkaTopicFactory
) -> None:
    topic = kafka_topics.create("schemas-delete")

    with pytest.raises(SchemaTopicError, match=r"cleanup\.policy=delete"):
        publish_schemas(settings.kafka, topic)
