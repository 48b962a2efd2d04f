"""The data plane's dead letters: what the extractor and the S3 sink could not handle, read back.

They are ``dead_letter`` Avro records on the dead-letter topic (``DUALPLANE_TOPIC_DEAD_LETTERS``),
each naming the stage, the reason and the message it came from (topic, partition, offset), so
``dlq list`` can show them beside RabbitMQ's and ``replay --from-offset`` can re-extract one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from dualplane.brokers.kafka.reader import read_to_end
from dualplane.core.settings import KafkaSettings
from dualplane.schemas.exceptions import CorruptRecord, IncompatibleSchema, UnknownSchema
from dualplane.schemas.serde import Codec


@dataclass(frozen=True)
class KafkaDeadLetter:
    """One dead letter of the dead-letter topic, as ``dlq list`` shows it."""

    id: str  # kafka:<partition>:<offset> of the dead letter itself
    stage: str
    reason: str
    failed_at: str
    job_id: str | None
    source_topic: str
    source_partition: int
    source_offset: int
    key: str | None  # the failed message's key: a raw page's URL


def read_dead_letters(
    kafka: KafkaSettings, topic: str, codec: Codec, *, since_ms: int | None = None
) -> Iterator[KafkaDeadLetter]:
    """Every dead letter of ``topic`` up to its end when called, oldest first per partition.

    A message that is no ``dead_letter`` record (written by something else) is skipped, not fatal:
    the reader is for people looking at failures, and one stray message must not hide the others.
    """
    for message in read_to_end(kafka, topic, since_ms=since_ms):
        try:
            decoded = codec.decode(message.value() or b"")
        except (CorruptRecord, UnknownSchema, IncompatibleSchema):
            continue
        if decoded.name != "dead_letter":
            continue
        letter = decoded.record
        failed_at = letter["failed_at"]
        key = letter.get("key")
        yield KafkaDeadLetter(
            id=f"kafka:{message.partition()}:{message.offset()}",
            stage=str(letter["stage"]),
            reason=str(letter["reason"]),
            failed_at=failed_at.isoformat() if isinstance(failed_at, datetime) else str(failed_at),
            job_id=letter.get("job_id"),
            source_topic=str(letter["source_topic"]),
            source_partition=int(letter["source_partition"]),
            source_offset=int(letter["source_offset"]),
            key=key.decode("utf-8", "replace") if isinstance(key, bytes) else None,
        )
