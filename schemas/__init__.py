"""Versioned Avro schemas of every Kafka payload, their serializers and compatibility rules.

Encode with :func:`encode`, decode with :func:`decode`; both use the process-wide registry of the
packaged schemas (``schemas/avro``) unless given another :class:`SchemaRegistry`. Services encode and
decode through a :class:`Codec` from :func:`codec_for`, which picks the wire format: single-object
encoding by default, the Confluent Schema Registry's when ``DUALPLANE_SCHEMA_REGISTRY_URL`` is set.
"""

from __future__ import annotations

from dualplane.schemas.codec import Decoded, ResolveId, decode, encode
from dualplane.schemas.registry import RegisteredSchema, SchemaRegistry, default_registry
from dualplane.schemas.serde import Codec, codec_for

__all__ = [
    "Codec",
    "Decoded",
    "RegisteredSchema",
    "ResolveId",
    "SchemaRegistry",
    "all_schemas",
    "codec_for",
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
