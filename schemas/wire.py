"""Framing of the two wire formats decoders accept: Avro single-object encoding and Confluent's.

Single-object encoding (Avro specification): ``C3 01``, the writer schema's 8-byte little-endian
CRC-64-AVRO fingerprint, then the Avro binary body. Confluent: a zero magic byte, the 4-byte
big-endian schema registry id, then the Avro binary body.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualplane.schemas.canonical import fingerprint_from_wire, fingerprint_to_wire
from dualplane.schemas.exceptions import CorruptRecord

SINGLE_OBJECT_MARKER = b"\xc3\x01"
SINGLE_OBJECT_HEADER_BYTES = 10
CONFLUENT_MAGIC = 0
CONFLUENT_HEADER_BYTES = 5


@dataclass(frozen=True)
class Frame:
    """A split message: exactly one of ``fingerprint`` and ``schema_id`` is set.

    The Avro body is ``data[body_offset:]``; it is not sliced out, so a 5 MB page is never copied.
    """

    data: bytes
    body_offset: int
    fingerprint: int | None = None
    schema_id: int | None = None

    @property
    def body_bytes(self) -> int:
        return len(self.data) - self.body_offset


def single_object_header(fingerprint: int) -> bytes:
    return SINGLE_OBJECT_MARKER + fingerprint_to_wire(fingerprint)


def confluent_header(schema_id: int) -> bytes:
    return bytes([CONFLUENT_MAGIC]) + schema_id.to_bytes(4, "big")


def split(data: bytes) -> Frame:
    """Header and body of ``data``; :class:`CorruptRecord` when it is in neither format."""
    if data[:2] == SINGLE_OBJECT_MARKER:
        if len(data) < SINGLE_OBJECT_HEADER_BYTES:
            raise CorruptRecord(
                f"single-object message of {len(data)} bytes is shorter than its 10-byte header"
            )
        return Frame(data, SINGLE_OBJECT_HEADER_BYTES, fingerprint=fingerprint_from_wire(data[2:10]))
    if data[:1] == bytes([CONFLUENT_MAGIC]):
        if len(data) < CONFLUENT_HEADER_BYTES:
            raise CorruptRecord(f"Confluent message of {len(data)} bytes is shorter than its 5-byte header")
        return Frame(data, CONFLUENT_HEADER_BYTES, schema_id=int.from_bytes(data[1:5], "big"))
    raise CorruptRecord(
        f"message starts with {bytes(data[:2]).hex() or 'nothing'}, neither the Avro single-object marker "
        "c301 nor the Confluent magic byte 00; it was not written by a dualplane Avro serializer"
    )
