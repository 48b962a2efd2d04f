"""How a process frames the Avro it writes and reads: :func:`codec_for` is the one place that decides.

Default, without a registry: Avro single-object encoding (``C3 01``, the CRC-64-AVRO fingerprint of
the writer schema, the body); every schema is also on the compacted schema topic
(:mod:`brokers.kafka.schema_topic`), so any consumer can resolve any fingerprint. With
``DUALPLANE_SCHEMA_REGISTRY_URL`` set: the Confluent wire format (``00``, the 4-byte registry id, the
body) through confluent-kafka's ``AvroSerializer`` (:mod:`schemas.confluent`). Decoding accepts both
in either mode; a Confluent frame needs the registry to resolve its id.

Producers call ``codec.encode(name, record, version)``, consumers ``codec.decode(value)``, with a
codec built once from the settings. The control plane's own state (the throttle state topic) stays
single-object in both modes: fetchers and frontiers must restore politeness even while a registry is
down. Settings read: ``DUALPLANE_SCHEMA_REGISTRY_*``, ``DUALPLANE_TOPIC_*`` (subjects are named after
the topics, ``<topic>-value``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dualplane.core.settings import Settings, TopicSettings
from dualplane.schemas.catalog import Manifest, load_manifest
from dualplane.schemas.codec import Decoded, ResolveId, decode, encode, set_default_resolver
from dualplane.schemas.registry import default_registry

if TYPE_CHECKING:  # imported on use: the registry client pulls in an HTTP stack default mode never needs
    from dualplane.schemas.confluent import ConfluentRegistry

WireFormat = Literal["single-object", "confluent"]


@dataclass(frozen=True, eq=False)
class Codec:
    """Encodes in one wire format, decodes both; ``registry`` set means Confluent Schema Registry mode."""

    topics: TopicSettings
    registry: ConfluentRegistry | None = None

    def __repr__(self) -> str:
        where = f" at {self.registry.url}" if self.registry else ""
        return f"Codec({self.wire_format}{where})"

    @property
    def wire_format(self) -> WireFormat:
        return "single-object" if self.registry is None else "confluent"

    @property
    def resolve_id(self) -> ResolveId | None:
        """How this codec turns a Confluent registry id into a writer schema; ``None`` without a registry."""
        return None if self.registry is None else self.registry.schema_text

    def encode(
        self, name: str, record: Mapping[str, Any], version: int | None = None, *, topic: str | None = None
    ) -> bytes:
        """``record`` as version ``version`` of ``name`` (default: latest), in this codec's wire format.

        ``topic`` is where the value will be produced; it names the registry subject (``<topic>-value``)
        and defaults to the manifest's topic for ``name`` and ``version``. Errors: those of
        :func:`schemas.encode`; in registry mode also :class:`~schemas.exceptions.RegistryUnavailable`
        (passing: retry the message later), :class:`~schemas.exceptions.SchemaRejected` (the registry
        refused the version) and :class:`~schemas.exceptions.RegistryError`; all three are registry
        errors, never the record's fault, so producers must not dead-letter on them.
        """
        if self.registry is None:
            return encode(name, record, version)
        schema = default_registry().get(name, version)
        return self.registry.encode(schema, record, topic or self.topic_for(name, schema.version))

    def decode(self, data: bytes, *, reader_version: int | None = None) -> Decoded:
        """Either wire format, as :func:`schemas.decode` reads it, resolving registry ids through this codec.

        In registry mode also :class:`~schemas.exceptions.RegistryUnavailable` when an id is not cached
        and the registry does not answer: the message is fine, retry it later.
        """
        return decode(data, reader_version=reader_version, resolve_id=self.resolve_id)

    def topic_for(self, name: str, version: int) -> str:
        """The topic the manifest routes version ``version`` of ``name`` to, under these topic settings."""
        return _manifest().entry(name).topic(version, self.topics)


def codec_for(settings: Settings) -> Codec:
    """The codec ``settings`` choose: registry mode exactly when ``DUALPLANE_SCHEMA_REGISTRY_URL`` is set.

    Building one makes no request: the registry is first asked when a value is encoded or an id resolved.
    """
    if not settings.schema_registry.url:
        return Codec(settings.topics)
    from dualplane.schemas.confluent import ConfluentRegistry  # noqa: PLC0415 (see the TYPE_CHECKING import)

    return Codec(settings.topics, ConfluentRegistry.from_settings(settings.schema_registry))


def install(settings: Settings) -> Codec:
    """:func:`codec_for`, whose id resolver also serves every plain :func:`schemas.decode` in this process.

    For process entry points whose decoders take no codec; see :func:`schemas.codec.set_default_resolver`.
    """
    codec = codec_for(settings)
    set_default_resolver(codec.resolve_id)
    return codec


@functools.lru_cache(maxsize=1)
def _manifest() -> Manifest:
    return load_manifest()
