"""The schemas this process knows, by name and version and by fingerprint; the packaged ones to start with."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from typing import Any

from fastavro import parse_schema
from fastavro.schema import SchemaParseException

from dualplane.schemas.canonical import canonical_form, crc64_avro, fingerprint_hex
from dualplane.schemas.catalog import load_manifest, read_schema
from dualplane.schemas.exceptions import SchemaConflict, SchemaError, UnknownSchema
from dualplane.schemas.wire import single_object_header


@dataclass(frozen=True, repr=False)
class RegisteredSchema:
    """One version of one schema: its JSON definition, fastavro's parsed form and its fingerprint."""

    name: str
    version: int
    fingerprint: int
    canonical_form: str = field(repr=False)
    definition: Mapping[str, Any] = field(repr=False, compare=False)
    parsed: Any = field(repr=False, compare=False)

    def __repr__(self) -> str:
        return f"RegisteredSchema({self.name!r}, v{self.version}, 0x{self.fingerprint_hex})"

    @property
    def fingerprint_hex(self) -> str:
        return fingerprint_hex(self.fingerprint)

    @property
    def full_name(self) -> str:
        """The record's namespace-qualified name, e.g. ``dualplane.PageRecord``."""
        return str(self.parsed["name"]) if isinstance(self.parsed, dict) else str(self.parsed)

    @property
    def header(self) -> bytes:
        """The 10-byte single-object encoding header: marker ``C3 01`` and little-endian fingerprint."""
        return single_object_header(self.fingerprint)

    def schema_json(self) -> str:
        """The full definition (docs, defaults, logical types included) as compact JSON."""
        return json.dumps(self.definition, separators=(",", ":"), ensure_ascii=False)


def build_schema(name: str, version: int, definition: Mapping[str, Any] | str) -> RegisteredSchema:
    """Parse and fingerprint a schema without registering it; :class:`SchemaError` if it is not valid Avro."""
    if not name or version < 1:
        raise SchemaError(f"a schema needs a name and a version >= 1, got {name!r} v{version}")
    try:
        loaded = json.loads(definition) if isinstance(definition, str) else dict(definition)
        parsed = parse_schema(loaded)
    except (ValueError, TypeError, KeyError, SchemaParseException) as error:
        raise SchemaError(f"schema {name} v{version} is not valid Avro: {error}") from error
    canonical = canonical_form(parsed)
    return RegisteredSchema(name, version, crc64_avro(canonical), canonical, loaded, parsed)


class SchemaRegistry:
    """Known schemas; registration only ever adds, and a name and version never changes its schema.

    Safe to share between threads: a loader thread may register while others encode and decode.
    """

    def __init__(self) -> None:
        self._by_version: dict[tuple[str, int], RegisteredSchema] = {}
        self._by_fingerprint: dict[int, RegisteredSchema] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_package(cls, root: Traversable | None = None) -> SchemaRegistry:
        """A registry holding every schema version the manifest lists (default: the packaged one)."""
        registry = cls()
        for entry in load_manifest(root).entries:
            for version in entry.versions:
                schema = registry.register(entry.name, version, read_schema(entry.name, version, root))
                if schema.full_name != entry.record:
                    raise SchemaError(
                        f"schema {entry.name} v{version} defines {schema.full_name}, but the manifest "
                        f"says {entry.record}; every version of a schema must keep its record name"
                    )
        return registry

    def register(self, name: str, version: int, definition: Mapping[str, Any] | str) -> RegisteredSchema:
        """Add a schema version and return it; registering the same schema again returns the existing one.

        :class:`SchemaConflict` if the name and version already have another schema, or the fingerprint
        already belongs to another name or version.
        """
        schema = build_schema(name, version, definition)
        with self._lock:
            known = self._by_fingerprint.get(schema.fingerprint)
            if known is not None and (known.name, known.version) == (name, version):
                return known
            _check_conflicts(schema, known, self._by_version.get((name, version)))
            self._by_fingerprint[schema.fingerprint] = schema
            self._by_version[(name, version)] = schema
        return schema

    def get(self, name: str, version: int | None = None) -> RegisteredSchema:
        """Version ``version`` of ``name``, the latest when ``None``; :class:`UnknownSchema` if absent."""
        if version is None:
            version = self.latest_version(name)
        schema = self._by_version.get((name, version))
        if schema is None:
            known = ", ".join(f"v{v}" for v in self.versions(name)) or "none"
            raise UnknownSchema(f"schema {name} has no version {version} here (known: {known})")
        return schema

    def find(self, fingerprint: int) -> RegisteredSchema | None:
        return self._by_fingerprint.get(fingerprint)

    def by_fingerprint(self, fingerprint: int) -> RegisteredSchema:
        """The schema with this fingerprint; :class:`UnknownSchema` with advice when there is none."""
        schema = self._by_fingerprint.get(fingerprint)
        if schema is None:
            raise UnknownSchema(
                f"writer schema fingerprint 0x{fingerprint:016x} is not known to this process; publish "
                "schemas with brokers.kafka.schema_topic.publish_schemas (to the topic "
                "DUALPLANE_TOPIC_SCHEMAS names) and load them here with "
                "dualplane.brokers.kafka.schema_topic.load_schemas_from_topic, or upgrade this consumer",
                fingerprint=fingerprint,
            )
        return schema

    def versions(self, name: str) -> tuple[int, ...]:
        return tuple(sorted(version for known, version in tuple(self._by_version) if known == name))

    def latest_version(self, name: str) -> int:
        """Highest registered version of ``name``; :class:`UnknownSchema` if the name is unknown."""
        versions = self.versions(name)
        if not versions:
            known = ", ".join(self.names()) or "none"
            raise UnknownSchema(f"no schema named {name!r} is registered (known: {known})")
        return versions[-1]

    def names(self) -> tuple[str, ...]:
        return tuple(sorted({name for name, _ in tuple(self._by_version)}))

    def all(self) -> tuple[RegisteredSchema, ...]:
        """Every registered schema, ordered by name then version."""
        return tuple(self._by_version[key] for key in sorted(self._by_version))

    def with_record_name(self, full_name: str) -> tuple[RegisteredSchema, ...]:
        """Every registered version whose record is named ``full_name``, oldest first."""
        return tuple(schema for schema in self.all() if schema.full_name == full_name)

    def __len__(self) -> int:
        return len(self._by_version)


def _check_conflicts(
    schema: RegisteredSchema, same_fingerprint: RegisteredSchema | None, same_version: RegisteredSchema | None
) -> None:
    label = f"{schema.name} v{schema.version}"
    if same_version is not None:
        raise SchemaConflict(
            f"{label} is already registered with fingerprint 0x{same_version.fingerprint_hex} and cannot "
            f"become 0x{schema.fingerprint_hex}; a published version never changes: add a new version"
        )
    if same_fingerprint is not None:
        raise SchemaConflict(
            f"{label} has the fingerprint 0x{schema.fingerprint_hex} of {same_fingerprint.name} "
            f"v{same_fingerprint.version}; a new version must change a field, a type or a name, not only "
            "docs, defaults or logical types (the Parsing Canonical Form strips those)"
        )


@functools.lru_cache(maxsize=1)
def default_registry() -> SchemaRegistry:
    """The process-wide registry: the packaged schemas plus any loaded from the schema topic."""
    return SchemaRegistry.from_package()


def or_default(registry: SchemaRegistry | None) -> SchemaRegistry:
    """``registry`` itself, even when empty (an empty registry is falsy), else the default registry."""
    return default_registry() if registry is None else registry
