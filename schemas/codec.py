"""Encode records to, and decode them from, self-describing Avro bytes.

``encode`` writes Avro single-object encoding. ``decode`` reads it, finding the writer schema by
fingerprint, and also reads the Confluent wire format when given a ``resolve_id`` callback.
Timestamps (``timestamp-millis``) encode from aware ``datetime`` or epoch milliseconds and decode to
aware UTC ``datetime``; decimals encode from and decode to ``decimal.Decimal``.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastavro import schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError
from fastavro.validation import ValidationError, validate

from dualplane.schemas.exceptions import CorruptRecord, IncompatibleSchema, InvalidRecord, UnknownSchema
from dualplane.schemas.registry import RegisteredSchema, SchemaRegistry, build_schema, or_default
from dualplane.schemas.wire import Frame, split

ResolveId = Callable[[int], str]
"""Maps a Confluent schema registry id to that schema's JSON text (the caller caches and fetches)."""

_process_resolve_id: ResolveId | None = None


def set_default_resolver(resolve_id: ResolveId | None) -> None:
    """Let :func:`decode` calls without ``resolve_id`` resolve Confluent ids with ``resolve_id``.

    For decoders deep in a process that take no codec (the throttle processor's fetch-event parser):
    the process entry point installs its registry once (:func:`schemas.serde.install`). ``None``
    removes it, so Confluent-framed data fails again with advice.
    """
    global _process_resolve_id  # noqa: PLW0603 (one process-wide setting, like the default registry)
    _process_resolve_id = resolve_id


@dataclass(frozen=True)
class Decoded:
    """A decoded record.

    ``version`` is the schema version ``record`` conforms to: the reader's when a reader version
    was requested, else the writer's. ``writer_version`` is ``None`` when the writer schema came from
    a Confluent registry and is none of the versions known here.
    """

    name: str
    version: int
    record: dict[str, Any]
    writer_version: int | None = None
    writer_fingerprint: int | None = None


@dataclass(frozen=True)
class _Writer:
    name: str
    version: int | None
    parsed: Any
    fingerprint: int


def encode(
    name: str,
    record: Mapping[str, Any],
    version: int | None = None,
    *,
    registry: SchemaRegistry | None = None,
) -> bytes:
    """``record`` as Avro single-object encoding with version ``version`` of ``name`` (default: latest).

    :class:`UnknownSchema` for an unknown name or version; :class:`InvalidRecord` when the record does
    not match the schema (a missing field without default, an extra field, a wrong type, a decimal with
    more fractional digits than the schema's scale).
    """
    schema = or_default(registry).get(name, version)
    buffer = io.BytesIO()
    buffer.write(schema.header)
    try:
        schemaless_writer(buffer, schema.parsed, record, strict_allow_default=True)
    except Exception as error:  # fastavro raises ValueError, TypeError, AttributeError... on bad input
        raise InvalidRecord(
            f"record does not match {name} v{schema.version}: {describe_invalid(schema, record, error)}"
        ) from error
    return buffer.getvalue()


def decode(
    data: bytes,
    *,
    reader_version: int | None = None,
    resolve_id: ResolveId | None = None,
    registry: SchemaRegistry | None = None,
) -> Decoded:
    """Decode single-object or (with ``resolve_id``, or the process's default) Confluent-framed Avro ``data``.

    With ``reader_version`` the record is resolved from the writer schema to that version of the same
    name (Avro schema resolution: a v2 reader fills v2's new fields with their defaults).
    :class:`UnknownSchema` when the writer schema cannot be found; :class:`CorruptRecord` when the bytes
    are not a valid encoding; :class:`IncompatibleSchema` when the reader cannot resolve the writer.
    """
    known = or_default(registry)
    frame = split(data)
    if frame.fingerprint is not None:
        schema = known.by_fingerprint(frame.fingerprint)
        writer = _Writer(schema.name, schema.version, schema.parsed, schema.fingerprint)
    else:
        assert frame.schema_id is not None
        writer = _confluent_writer(known, frame.schema_id, resolve_id or _process_resolve_id)
    reader, version = _target(known, writer, reader_version)
    record = _read_body(frame, writer, reader)
    return Decoded(writer.name, version, record, writer.version, writer.fingerprint)


def _target(
    known: SchemaRegistry, writer: _Writer, reader_version: int | None
) -> tuple[RegisteredSchema | None, int]:
    """The reader schema (``None``: read as written) and the version the record will conform to."""
    if reader_version is None and writer.version is not None:
        return None, writer.version
    reader = known.get(writer.name, reader_version)
    return (None if reader.fingerprint == writer.fingerprint else reader), reader.version


def _read_body(frame: Frame, writer: _Writer, reader: RegisteredSchema | None) -> dict[str, Any]:
    label = f"{writer.name} v{writer.version or '?'} (0x{writer.fingerprint:016x})"
    stream = io.BytesIO(frame.data)  # shares the bytes object's buffer: no copy
    stream.seek(frame.body_offset)
    try:
        record = schemaless_reader(stream, writer.parsed, reader.parsed if reader else None)
    except SchemaResolutionError as error:
        assert reader is not None
        raise IncompatibleSchema(
            f"data written with {label} cannot be read as {reader.name} v{reader.version}: {error}"
        ) from error
    except Exception as error:  # truncated or garbled bytes surface as EOFError, IndexError, ...
        raise CorruptRecord(f"{frame.body_bytes}-byte body is not valid {label} data: {error!r}") from error
    if stream.tell() != len(frame.data):
        raise CorruptRecord(f"{label} data has {len(frame.data) - stream.tell()} unexpected trailing bytes")
    if not isinstance(record, dict):
        raise CorruptRecord(f"{label} is not a record schema; dualplane payloads are records")
    return record


def _confluent_writer(known: SchemaRegistry, schema_id: int, resolve_id: ResolveId | None) -> _Writer:
    if resolve_id is None:
        raise UnknownSchema(
            f"message is in the Confluent wire format (schema id {schema_id}) and this reader has no schema "
            "registry: set DUALPLANE_SCHEMA_REGISTRY_URL to the producers' registry (readers decode through "
            "dualplane.schemas.serde.codec_for(settings)), or pass resolve_id"
        )
    foreign = _parse_foreign(resolve_id(schema_id))
    schema = known.find(foreign.fingerprint)
    if schema is not None:
        return _Writer(schema.name, schema.version, schema.parsed, schema.fingerprint)
    namesakes = known.with_record_name(foreign.full_name)
    if not namesakes:
        raise UnknownSchema(
            f"schema id {schema_id} defines {foreign.full_name}, which no schema known here is named; "
            "upgrade this consumer",
            fingerprint=foreign.fingerprint,
        )
    return _Writer(namesakes[-1].name, None, foreign.parsed, foreign.fingerprint)


@functools.lru_cache(maxsize=256)
def _parse_foreign(schema_json: str) -> RegisteredSchema:
    # Parsing and fingerprinting costs far more than decoding one record: do it once per schema text.
    return build_schema("confluent", 1, schema_json)


def describe_invalid(schema: RegisteredSchema, record: Mapping[str, Any], error: Exception) -> str:
    """Why ``record`` failed to encode as ``schema``: fastavro's validator names the field at fault,
    the writer's own ``error`` often does not."""
    try:
        validate(record, schema.parsed, raise_errors=True)
    except ValidationError as invalid:
        return str(invalid)
    except Exception:  # the validator itself choked on the input: fall back to the writer's error
        return str(error) or repr(error)
    return str(error) or repr(error)
