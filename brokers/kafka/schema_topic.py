"""The compacted schema topic: every schema keyed by its fingerprint, so any consumer can resolve any writer.

Key: the fingerprint as 16 hex digits. Value: JSON ``{"name", "version", "fingerprint", "schema"}``
with the full schema definition (docs, defaults and logical types kept: readers need them).
Settings read: ``DUALPLANE_KAFKA_*`` through the given :class:`KafkaSettings`; the topic name is the
caller's (``DUALPLANE_TOPIC_SCHEMAS`` in services).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]  # re-exported, not in __all__

from dualplane.brokers.kafka import clients
from dualplane.core.settings import KafkaSettings
from dualplane.schemas.canonical import fingerprint_hex, schema_fingerprint
from dualplane.schemas.exceptions import SchemaError, SchemaTopicError
from dualplane.schemas.registry import RegisteredSchema, SchemaRegistry, or_default

log = logging.getLogger(__name__)

COMPACTED = {"cleanup.policy": "compact"}
_POLL_S = 0.2


def entry_value(schema: RegisteredSchema) -> bytes:
    """The schema topic value of ``schema``."""
    entry = {
        "name": schema.name,
        "version": schema.version,
        "fingerprint": schema.fingerprint_hex,
        "schema": schema.definition,
    }
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode()


def publish_schemas(
    kafka: KafkaSettings, topic: str, *, registry: SchemaRegistry | None = None, timeout_s: float = 30.0
) -> int:
    """Produce every schema of ``registry`` (default: this process's) to ``topic``; return how many.

    Creates ``topic`` as a compacted single-partition topic when it is missing. Publishing again is
    harmless: compaction keeps one value per fingerprint. :class:`SchemaTopicError` when the topic is
    not compacted (old schemas would expire with retention) or the broker did not confirm every
    schema within ``timeout_s``.
    """
    schemas = or_default(registry).all()
    try:
        clients.ensure_topics(kafka, [topic], partitions=1, config=dict(COMPACTED), timeout_s=timeout_s)
        _require_compacted(kafka, topic, timeout_s)
    except (RuntimeError, KafkaException, TimeoutError) as error:
        raise SchemaTopicError(f"cannot prepare the schema topic {topic!r}: {error}") from error
    failures: list[str] = []
    # Not idempotent: a duplicate is harmless on this compacted topic, and an idempotent producer's first
    # delivery waits ~0.5 s for its producer id, which every service paid at start.
    producer = clients.producer(kafka, **{"enable.idempotence": False})
    for schema in schemas:
        producer.produce(
            topic,
            entry_value(schema),
            key=schema.fingerprint_hex.encode(),
            on_delivery=lambda error, _message: failures.append(str(error)) if error else None,
        )
    unconfirmed = producer.flush(timeout_s)
    if unconfirmed or failures:
        raise SchemaTopicError(
            f"{unconfirmed} of {len(schemas)} schemas unconfirmed after {timeout_s} s and "
            f"{len(failures)} failed on topic {topic!r} ({'; '.join(failures[:3]) or 'timeout'}); "
            "check that Kafka is reachable (DUALPLANE_KAFKA_BOOTSTRAP_SERVERS) and publish again"
        )
    return len(schemas)


def _require_compacted(kafka: KafkaSettings, topic: str, timeout_s: float) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = clients.admin(kafka)  # must outlive the future, or librdkafka cancels the request
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            config = admin.describe_configs([resource])[resource].result(timeout=timeout_s)
            break
        except KafkaException as error:
            # Another process may have created the topic a moment ago: the broker that answers can
            # lag behind the controller's metadata for a while, and says the topic is unknown.
            if error.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                raise
            time.sleep(_POLL_S)
    policy = config["cleanup.policy"].value
    if "compact" not in policy.split(","):
        raise SchemaTopicError(
            f"schema topic {topic!r} has cleanup.policy={policy}, so schemas would expire with retention; "
            "set cleanup.policy=compact on it (kafka-configs --alter --add-config cleanup.policy=compact) "
            "or point DUALPLANE_TOPIC_SCHEMAS at a new topic"
        )


def load_schemas_from_topic(
    kafka: KafkaSettings, topic: str, timeout_s: float = 30.0, *, registry: SchemaRegistry | None = None
) -> int:
    """Read ``topic`` up to its end offsets at call time; register what ``registry`` lacks; return how many.

    ``registry`` defaults to this process's, so later ``schemas.decode`` calls can read data written by
    newer producers. A missing topic loads nothing. Malformed or conflicting entries are logged and
    skipped: they must not stop a consumer. :class:`SchemaTopicError` when the end is not reached
    within ``timeout_s``.
    """
    known = or_default(registry)
    deadline = time.monotonic() + timeout_s
    consumer = clients.consumer(kafka, f"dualplane-schema-loader-{uuid.uuid4().hex}")
    try:
        ends = _end_offsets(consumer, topic, timeout_s)
        if not ends:
            return 0
        consumer.assign([TopicPartition(topic, partition, low) for partition, (low, _) in ends.items()])
        return _read_to_end(consumer, topic, {p: high for p, (_, high) in ends.items()}, known, deadline)
    except KafkaException as error:
        raise SchemaTopicError(f"cannot read the schema topic {topic!r}: {error}") from error
    finally:
        consumer.close()


def _end_offsets(consumer: Consumer, topic: str, timeout_s: float) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` of the partitions holding messages; empty when the topic is missing."""
    metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return {}
    ends: dict[int, tuple[int, int]] = {}
    for partition in metadata.partitions:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=timeout_s, cached=False
        )
        if high > low:
            ends[partition] = (low, high)
    return ends


def _read_to_end(
    consumer: Consumer, topic: str, ends: dict[int, int], known: SchemaRegistry, deadline: float
) -> int:
    added = 0
    pending = dict(ends)
    while pending:
        if time.monotonic() > deadline:
            raise SchemaTopicError(
                f"schema topic {topic!r} not read to its end offsets {ends} in time; partitions "
                f"{sorted(pending)} are behind. Is Kafka overloaded? Retry with a longer timeout"
            )
        message = consumer.poll(_POLL_S)
        if message is not None:
            added += _consume(message, known)
        positions = consumer.position([TopicPartition(topic, p) for p in pending])
        for position in positions:
            if position.offset >= pending[position.partition]:
                del pending[position.partition]
    return added


def _consume(message: Message, known: SchemaRegistry) -> int:
    """1 if ``message`` registered a new schema, else 0."""
    error = message.error()
    if error is not None:
        if error.code() == KafkaError._PARTITION_EOF:
            return 0
        raise KafkaException(error)
    where = f"schema topic {message.topic()}[{message.partition()}]@{message.offset()}"
    try:
        return _register(message.key(), message.value(), known)
    except (SchemaError, ValueError, TypeError, KeyError) as problem:
        log.warning("%s: skipped: %s", where, problem)
        return 0


def _register(key: bytes | None, value: bytes | None, known: SchemaRegistry) -> int:
    if value is None:
        return 0  # a tombstone: nothing to learn
    entry: dict[str, Any] = json.loads(value)
    definition = entry["schema"]
    actual = fingerprint_hex(
        schema_fingerprint(json.loads(definition) if isinstance(definition, str) else definition)
    )
    claimed = {(key or b"").decode(errors="replace"), str(entry.get("fingerprint"))}
    if claimed != {actual}:
        raise SchemaError(f"key and fingerprint {sorted(claimed)} do not match the schema's own 0x{actual}")
    if known.find(int(actual, 16)) is not None:
        return 0
    known.register(str(entry["name"]), int(entry["version"]), definition)
    return 1
