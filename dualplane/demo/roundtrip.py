"""The demo's first step: one message through each plane and the object store, timed and checked.

It proves the wiring before the crawl (:mod:`dualplane.demo.crawl`) starts: a Kafka record produced
idempotently and read back from its offset, a RabbitMQ message published with a confirm to a quorum
queue and acked, and an S3 object written, listed and read back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from dualplane.brokers import amqp
from dualplane.brokers.kafka import clients
from dualplane.connectors.storage import s3
from dualplane.core.settings import Settings

DEMO_TOPIC = "dualplane.demo"
DEMO_QUEUE = "dualplane.demo"


@dataclass(frozen=True)
class RoundTrip:
    """One checked round trip: what went where, whether it came back intact, and how fast."""

    plane: str
    path: str
    ok: bool
    latency_ms: float
    detail: str


def run_demo(settings: Settings) -> list[RoundTrip]:
    """Run every round trip; a failing one is reported, not raised, so the summary is complete."""
    steps: list[tuple[str, str, Callable[[Settings, bytes], str]]] = [
        ("data (Kafka)", f"produce -> {DEMO_TOPIC} -> consume", kafka_round_trip),
        ("control (RabbitMQ)", f"publish+confirm -> {DEMO_QUEUE} (quorum) -> ack", amqp_round_trip),
        ("objects (S3)", f"put -> s3://{settings.s3.bucket}/demo/ -> list -> get", s3_round_trip),
    ]
    results = []
    for plane, path, step in steps:
        payload = f"dualplane demo {uuid.uuid4()}".encode()
        started = time.perf_counter()
        try:
            detail, ok = step(settings, payload), True
        except Exception as error:  # the summary shows the failure and its reason
            detail, ok = f"{type(error).__name__}: {error}", False
        elapsed_ms = (time.perf_counter() - started) * 1000
        results.append(RoundTrip(plane, path, ok, round(elapsed_ms, 1), detail))
    return results


def kafka_round_trip(settings: Settings, payload: bytes) -> str:
    clients.ensure_topics(settings.kafka, [DEMO_TOPIC])
    try:
        delivered = clients.produce_one(settings.kafka, DEMO_TOPIC, b"demo", payload, timeout_s=30)
    except clients.NotAcknowledged as error:
        raise RuntimeError(f"produce was not confirmed: {error}") from error
    partition, offset = delivered.partition(), delivered.offset()
    assert partition is not None and offset is not None  # set on every confirmed delivery
    consumer = clients.consumer(settings.kafka, f"dualplane-demo-{uuid.uuid4()}")
    try:
        consumer.assign([TopicPartition(DEMO_TOPIC, partition, offset)])
        message = _poll_one(consumer, timeout_s=30)
    finally:
        consumer.close()
    if message.value() != payload:
        raise RuntimeError("the record read back differs from the one produced")
    return f"partition {partition} offset {offset}, {len(payload)} bytes intact"


def _poll_one(consumer: Consumer, timeout_s: float) -> Message:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        error = message.error()
        if error is None:
            return message
        if error.code() != KafkaError._PARTITION_EOF:
            raise RuntimeError(str(error))
    raise TimeoutError(f"no record came back within {timeout_s:.0f} s")


def amqp_round_trip(settings: Settings, payload: bytes) -> str:
    connection = amqp.connect(settings.amqp)
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare(DEMO_QUEUE, durable=True, arguments={"x-queue-type": "quorum"})
        # With confirms on, basic_publish raises unless the broker confirmed (and routed) it.
        channel.basic_publish("", DEMO_QUEUE, payload, mandatory=True, properties=amqp.persistent())
        for method, _properties, body in channel.consume(DEMO_QUEUE, inactivity_timeout=30):
            if method is None:
                raise TimeoutError("no message came back within 30 s")
            channel.basic_ack(method.delivery_tag)
            if body == payload:
                break
        channel.cancel()
    finally:
        connection.close()
    return f"confirmed, delivered and acked, {len(payload)} bytes intact"


def s3_round_trip(settings: Settings, payload: bytes) -> str:
    bucket = s3.ensure_bucket(settings.s3)
    client = s3.client(settings.s3)
    key = f"demo/{uuid.uuid4()}.txt"
    client.put_object(Bucket=bucket, Key=key, Body=payload)
    listed = client.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount", 0)
    body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    if listed != 1 or body != payload:
        raise RuntimeError(f"object {key} was not listed once and read back intact")
    return f"s3://{bucket}/{key} listed and read back intact"
