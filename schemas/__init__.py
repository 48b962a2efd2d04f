"""Versioned Avro schemas of every Kafka payload, their serializers and compatibility rules.

Encode with :func:`encode`, decode with :func:`decode`; both use the process-wide registry of the
packaged schemas (``schemas/avro``) unless given another :class:`SchemaRegistry`.
"""

from __future__ import annotations

from schemas.codec import Decoded, ResolveId, decode, encode
from schemas.registry import RegisteredSchema, SchemaRegistry, default_registry

__all__ = [
    "Decoded",
    "RegisteredSchema",
    "ResolveId",
    "SchemaRegistry",
    "all_schemas",
    "decode",
    "default_registry",
    "encode",
    "fingerprint",
    "latest_version",
]


def latest_version(name: str) -> int:
    """The highest known version of schema ``name``; :class:`~schemas.exceptions.UnknownSchema` if none."""
    return default_registry().latest_version(name)


def fingerprint(name: str, version: int | None = None) -> int:
    """CRC-64-AVRO fingerprint of version ``version`` of ``name`` (default: latest), as an unsigned int."""
    return default_registry().get(name, version).fingerprint


def all_schemas() -> tuple[RegisteredSchema, ...]:
    """Every known schema version, ordered by name then version."""
    return default_registry().all()
