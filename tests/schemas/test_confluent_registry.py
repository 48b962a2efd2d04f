"""Schema Registry mode against a real registry over HTTP and a real Kafka.

The registry is the local stack's (``rivven-schema``, started here when it is not running) unless
``DUALPLANE_TEST_BACKEND`` is not ``local``; then ``DUALPLANE_SCHEMA_REGISTRY_URL`` names one.
Each test writes to its own topics, so its subjects (``<topic>-value``) are its own too.
"""

from __future__ import annotations

import io
import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import avro.io as avro_io
import avro.schema as avro_schema
import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import SchemaRegistrySettings, Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extractor.records import iter_records
from dualplane.data_plane.extractor.service import STORE_RETRY_S, Extractor
from dualplane.schemas.confluent import subject_for
from dualplane.schemas.exceptions import RegistryUnavailable, SchemaRejected
from dualplane.schemas.registry import build_schema
from dualplane.schemas.wire import CONFLUENT_MAGIC, split
from dualplane.stack import LocalStack
from dualplane.stack.schema_registry import SchemaRegistryServer
from tests.schemas.test_codec import page_record
from tests.support.brokers import BrokerSession
from tests.support.factories import (
    ControlPlaneFactory,
    KafkaClientFactory,
    KafkaTopicFactory,
    S3BucketFactory,
)
from tests.support.hand_off import hand_off
from tests.support.tcp_relay import TcpRelay, free_port

pytestmark = pytest.mark.integration

CLOSED_URL = "http://127.0.0.1:9"  # the discard port: nothing listens there
AT = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def registry_url(brokers: BrokerSession) -> Iterator[str]:
    """A real registry for the module: the local stack's, started (and later stopped) when needed."""
    if brokers.backend != "local":
        url = brokers.registry_url or brokers.settings.schema_registry.url
        if not url:
            pytest.fail(f"backend {brokers.backend!r} needs DUALPLANE_SCHEMA_REGISTRY_URL", pytrace=False)
        yield url
        return
    stack = LocalStack(brokers.settings, with_registry=True)
    server = next(s for s in stack.services if isinstance(s, SchemaRegistryServer))
    if not server.distribution.installed:
        pytest.fail(
            "the local schema registry is not built: run `dualplane stack install --with-registry`",
            pytrace=False,
        )
    was_up = server.healthy()[0]
    stack.up()
    yield server.url
    if not was_up and os.environ.get("DUALPLANE_TEST_KEEP_STACK") != "1":
        stack.down(only={server.name})


def in_registry_mode(settings: Settings, url: str, records_topic: str) -> Settings:
    return settings.model_copy(
        update={
            "schema_registry": SchemaRegistrySettings(url=url),
            "topics": settings.topics.model_copy(update={"records": records_topic}),
        }
    )


def priced(version: int, sku: str) -> dict[str, Any]:
    record = page_record(version)
    record["canonical_url"] = f"https://shop.example.com/p/{sku}"
    record["product"] = {**record["product"], "sku": sku, "price": Decimal("19.99")}
    return record


def produce(kafka: KafkaClientFactory, topic: str, values: list[bytes]) -> None:
    producer = kafka.producer()
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def registry_get(url: str, path: str) -> Any:
    response = httpx.get(f"{url}{path}", timeout=10)
    response.raise_for_status()
    return response.json()


def test_records_written_in_registry_mode_decode_through_records_and_an_independent_reader(
    settings: Settings, registry_url: str, kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic = kafka_topics.create("sr-records")
    mode = in_registry_mode(settings, registry_url, topic)
    codec = schemas.codec_for(mode)
    written = [priced(3, f"sku-{n}") for n in range(3)]

    produce(kafka, topic, [codec.encode("page_record", record) for record in written])
    typed = list(iter_records(mode, follow=False))
    values = [message.value() or b"" for message in read_to_end(mode.kafka, topic)]

    assert [record.product.sku for record in typed if record.product] == ["sku-0", "sku-1", "sku-2"]
    assert typed[0].product is not None and typed[0].product.price == Decimal("19.99")
    for value, record in zip(values, written, strict=True):
        frame = split(value)
        assert value[0] == CONFLUENT_MAGIC and frame.schema_id is not None
        # An independent reader: the writer schema fetched by id over HTTP, the body read by Apache Avro.
        fetched = registry_get(registry_url, f"/schemas/ids/{frame.schema_id}")
        reader = avro_io.DatumReader(avro_schema.parse(fetched["schema"]))
        decoded = reader.read(avro_io.BinaryDecoder(io.BytesIO(value[frame.body_offset :])))
        assert decoded["product"]["sku"] == record["product"]["sku"]
        assert decoded["product"]["price"] == Decimal("19.99")
        assert decoded["fetched_at"] == record["fetched_at"]


def test_a_topic_mixing_both_wire_formats_decodes(
    settings: Settings, registry_url: str, kafka_topics: KafkaTopicFactory, kafka: KafkaClientFactory
) -> None:
    topic = kafka_topics.create("sr-mixed")
    mode = in_registry_mode(settings, registry_url, topic)
    confluent, single_object = schemas.codec_for(mode), schemas.codec_for(settings)

    produce(
        kafka,
        topic,
        [
            single_object.encode("page_record", priced(1, "old-v1"), 1),
            confluent.encode("page_record", priced(2, "new-v2"), 2),
            single_object.encode("page_record", priced(2, "old-v2"), 2),
        ],
    )
    values = [message.value() or b"" for message in read_to_end(mode.kafka, topic)]
    typed = list(iter_records(mode, follow=False))

    assert [value[:1] for value in values] == [b"\xc3", b"\x00", b"\xc3"]
    assert [confluent.decode(value).record["product"]["sku"] for value in values] == [
        "old-v1",
        "new-v2",
        "old-v2",
    ]
    assert [(r.schema_version, r.product.sku if r.product else None) for r in typed] == [
        (1, "old-v1"),
        (2, "new-v2"),
        (2, "old-v2"),
    ]


def test_page_record_v1_then_v2_register_as_backward_compatible_versions(
    settings: Settings, registry_url: str, kafka_topics: KafkaTopicFactory
) -> None:
    topic = kafka_topics.create("sr-evolve")
    codec = schemas.codec_for(in_registry_mode(settings, registry_url, topic))
    subject = subject_for(topic)

    first = split(codec.encode("page_record", priced(1, "a"), 1))
    second = split(codec.encode("page_record", priced(2, "b"), 2))
    again = split(codec.encode("page_record", priced(2, "c"), 2))

    assert registry_get(registry_url, f"/subjects/{subject}/versions") == [1, 2]
    assert registry_get(registry_url, f"/config/{subject}")["compatibilityLevel"] == "BACKWARD"
    assert first.schema_id != second.schema_id == again.schema_id
    latest = registry_get(registry_url, f"/subjects/{subject}/versions/latest")
    assert build_schema("registry", 1, latest["schema"]).fingerprint == schemas.fingerprint("page_record", 2)


def test_a_version_old_data_cannot_be_read_with_is_rejected_by_the_registry(
    settings: Settings, registry_url: str, kafka_topics: KafkaTopicFactory
) -> None:
    topic = kafka_topics.create("sr-breaking")
    codec = schemas.codec_for(in_registry_mode(settings, registry_url, topic))
    codec.encode("page_record", priced(2, "a"), 2)
    definition = json.loads(schemas.default_registry().get("page_record", 2).schema_json())
    definition["fields"].append({"name": "seller", "type": "string"})  # no default: v2 data has none
    breaking = build_schema("page_record", 3, definition)
    assert codec.registry is not None

    with pytest.raises(SchemaRejected, match=r"not BACKWARD compatible .*\(give new fields defaults\)"):
        codec.registry.encode(breaking, {**priced(2, "b"), "seller": "acme"}, topic)

    assert registry_get(registry_url, f"/subjects/{subject_for(topic)}/versions") == [1]


def test_a_registry_outage_is_a_clear_error_and_cached_ids_keep_decoding(
    settings: Settings, registry_url: str, kafka_topics: KafkaTopicFactory
) -> None:
    topic = kafka_topics.create("sr-outage")
    working = schemas.codec_for(in_registry_mode(settings, registry_url, topic))
    value = working.encode("page_record", priced(3, "a"))
    working.decode(value)  # caches the writer schema by id
    down = schemas.codec_for(in_registry_mode(settings, CLOSED_URL, topic))

    with pytest.raises(RegistryUnavailable) as encoding:
        down.encode("page_record", priced(3, "b"))
    with pytest.raises(RegistryUnavailable) as decoding:
        down.decode(value)

    for error in (encoding.value, decoding.value):
        message = str(error)
        assert f"the schema registry at {CLOSED_URL}" in message and "did not answer" in message
        assert "correct DUALPLANE_SCHEMA_REGISTRY_URL" in message and "unset it" in message
    assert "setting BACKWARD compatibility on subject" in str(encoding.value)
    assert "fetching the writer schema of id" in str(decoding.value)
    assert working.decode(value).record["product"]["sku"] == "a"


@pytest.mark.slow
def test_the_extractor_waits_out_a_registry_outage_then_writes_confluent_records(
    control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory, registry_url: str
) -> None:
    # The registry is reached through a relay the test opens late: a real outage, then recovery.
    target = urlsplit(registry_url)
    relay = TcpRelay(free_port(), (target.hostname or "127.0.0.1", target.port or 8081))
    base = control_plane.settings()
    private = base.model_copy(
        update={
            "s3": base.s3.model_copy(update={"bucket": s3_buckets.create()}),
            "schema_registry": SchemaRegistrySettings(url=f"http://127.0.0.1:{relay.port}"),
        }
    )
    ensure_data_plane_topics(private)
    urls = [f"https://sr.example/p/{n}" for n in range(3)]
    produce_pages(private, urls)  # single-object, as a fetcher without a registry writes them
    extractor = Extractor(private)
    thread = threading.Thread(target=extractor.run, name="extractor", daemon=True)
    thread.start()
    try:
        time.sleep(STORE_RETRY_S + 3)  # the extractor meets the closed relay at least once
        during = list(read_to_end(private.kafka, private.topics.records))
        relay.open()
        deadline = time.monotonic() + 90
        while {r.url for r in iter_records(private, follow=False)} != set(urls):
            assert time.monotonic() < deadline, "the extractor did not resume after the outage"
            time.sleep(1)
    finally:
        extractor.stop()
        thread.join(30)
        relay.close()

    assert during == []
    assert list(read_to_end(private.kafka, private.topics.dead_letters)) == []
    values = [message.value() or b"" for message in read_to_end(private.kafka, private.topics.records)]
    assert {value[:1] for value in values} == {bytes([CONFLUENT_MAGIC])}


def produce_pages(settings: Settings, urls: list[str]) -> None:
    producer = clients.producer(settings.kafka)
    for url in urls:
        page = raw_page(f"<html><title>{url}</title><p>hello</p></html>".encode(), url, fetched_at=AT)
        producer.produce(settings.topics.pages_raw, schemas.encode("raw_page", page), url.encode())
    assert producer.flush(30) == 0


@pytest.mark.slow
def test_confluent_kafkas_own_avro_deserializer_reads_every_topic_we_write_in_registry_mode(
    control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory, registry_url: str
) -> None:
    """What Kafka Connect or ksqlDB would do: no dualplane code on the reading side, only the registry."""
    base = control_plane.settings()
    mode = base.model_copy(
        update={
            "s3": base.s3.model_copy(update={"bucket": s3_buckets.create()}),
            "schema_registry": SchemaRegistrySettings(url=registry_url),
        }
    )
    ensure_data_plane_topics(mode)
    body = (
        b'<html><head><title>Kettle</title></head><body><p>A kettle.</p><a href="/p/2">next</a></body></html>'
    )
    pages = [raw_page(body, f"https://sr.example/p/{n}", fetched_at=AT) for n in range(2)]
    hand_off(mode, pages)  # the fetcher's own hand-off: pages.raw and fetch.events, Confluent-framed
    producer = clients.producer(mode.kafka)
    producer.produce(mode.topics.pages_raw, b"\x00\x00\x00\x00\x07not avro", b"broken")  # a dead letter
    assert producer.flush(30) == 0
    extractor = Extractor(mode)
    thread = threading.Thread(target=extractor.run, name="extractor", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 90
        while len(list(read_to_end(mode.kafka, mode.topics.records))) < 2 or not list(
            read_to_end(mode.kafka, mode.topics.dead_letters)
        ):
            assert time.monotonic() < deadline, "the extractor wrote no records and dead letter"
            time.sleep(0.5)
    finally:
        extractor.stop()
        thread.join(30)

    deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))

    def read(topic: str) -> list[dict[str, Any]]:
        messages = [m for m in read_to_end(mode.kafka, topic) if m.key() != b"broken"]
        values = [message.value() or b"" for message in messages]
        assert values and {value[:1] for value in values} == {bytes([CONFLUENT_MAGIC])}, topic
        return [deserialize(value, SerializationContext(topic, MessageField.VALUE)) for value in values]

    raw, events = read(mode.topics.pages_raw), read(mode.topics.fetch_events)
    records = read(mode.topics.records)
    letters = [
        deserialize(m.value(), SerializationContext(mode.topics.dead_letters, MessageField.VALUE))
        for m in read_to_end(mode.kafka, mode.topics.dead_letters)
    ]
    assert sorted((page["url"], page["body"], page["fetched_at"]) for page in raw) == [
        (page["url"], body, AT) for page in pages
    ]
    assert sorted(event["url"] for event in events) == [page["url"] for page in pages]
    assert sorted(record["url"] for record in records) == [page["url"] for page in pages]
    assert {record["title"] for record in records} == {"Kettle"}
    assert [(letter["stage"], letter["key"], letter["payload"]) for letter in letters] == [
        ("decode", b"broken", b"\x00\x00\x00\x00\x07not avro")
    ]
    assert "undecodable raw page" in letters[0]["reason"]
