"""Parsing Canonical Form and CRC-64-AVRO fingerprints, exactly as the Avro specification defines them."""

from __future__ import annotations

from typing import Any

from fastavro.schema import fingerprint as _fastavro_fingerprint
from fastavro.schema import to_parsing_canonical_form

FINGERPRINT_BYTES = 8


def canonical_form(schema: Any) -> str:
    """The schema's Parsing Canonical Form: only name, type, fields, symbols, items, values and size remain.

    Docs, defaults, aliases and logical types are stripped, so two schemas that differ only there
    share a canonical form and a fingerprint.
    """
    return str(to_parsing_canonical_form(schema))


def crc64_avro(canonical: str) -> int:
    """The spec's 64-bit Rabin fingerprint of a canonical form, as an unsigned integer.

    The spec's test vector: ``crc64_avro('"null"') == 0x63DD24E7CC258F8A``.
    """
    # fastavro returns the hex of the fingerprint's little-endian bytes, the order it has on the wire.
    return int.from_bytes(bytes.fromhex(_fastavro_fingerprint(canonical, "CRC-64-AVRO")), "little")


def schema_fingerprint(schema: Any) -> int:
    """CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form."""
    return crc64_avro(canonical_form(schema))


def fingerprint_hex(fingerprint: int) -> str:
    """The fingerprint as 16 lower-case hex digits, most significant first (the schema topic's key)."""
    return f"{fingerprint:016x}"


def fingerprint_to_wire(fingerprint: int) -> bytes:
    """The 8 little-endian bytes single-object encoding puts after its marker."""
    return fingerprint.to_bytes(FINGERPRINT_BYTES, "little")


def fingerprint_from_wire(data: bytes) -> int:
    """Inverse of :func:`fingerprint_to_wire`."""
    return int.from_bytes(data, "little")
