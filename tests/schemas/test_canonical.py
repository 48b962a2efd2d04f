"""Parsing Canonical Form and CRC-64-AVRO fingerprints, checked against the spec and Apache avro."""

from __future__ import annotations

import json
from typing import Any

import avro.schema as avro_schema
import pytest

from dualplane import schemas
from dualplane.schemas.canonical import canonical_form, crc64_avro, fingerprint_hex, schema_fingerprint
from dualplane.schemas.registry import build_schema

pytestmark = pytest.mark.unit

# The specification's test vectors (fingerprints as Java longs, i.e. signed).
SPEC_VECTORS = [
    ('"null"', 7195948357588979594),
    ('"boolean"', -6970731678124411036),
    ('{"name":"foo","type":"fixed","size":15}', 1756455273707447556),
]

EMPTY64 = 0xC15D213AA4D7A795
PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def reference_crc64(data: bytes) -> int:
    """The specification's fingerprint64 pseudo-code, transcribed independently of fastavro."""
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (EMPTY64 & -(fp & 1))
        table.append(fp)
    fp = EMPTY64
    for byte in data:
        fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
    return fp


@pytest.mark.parametrize(("canonical", "signed"), SPEC_VECTORS)
def test_fingerprints_match_the_spec_test_vectors(canonical: str, signed: int) -> None:
    assert crc64_avro(canonical) == signed % 2**64
    assert reference_crc64(canonical.encode()) == signed % 2**64


def test_null_fingerprint_and_its_single_object_header() -> None:
    assert crc64_avro('"null"') == 0x63DD24E7CC258F8A
    assert fingerprint_hex(0x63DD24E7CC258F8A) == "63dd24e7cc258f8a"
    assert build_schema("null", 1, '"null"').header == bytes.fromhex("c3018a8f25cce724dd63")


def test_canonical_form_strips_docs_defaults_and_logical_types_and_qualifies_names() -> None:
    schema = {
        "type": "record",
        "name": "R",
        "namespace": "dualplane",
        "doc": "gone",
        "fields": [
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}, "doc": "gone"},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
    expected = (
        '{"name":"dualplane.R","type":"record","fields":[{"name":"at","type":"long"},'
        '{"name":"note","type":["null","string"]}]}'
    )
    assert canonical_form(schema) == expected
    assert schema_fingerprint(schema) == reference_crc64(expected.encode())


@pytest.mark.parametrize("schema", schemas.all_schemas(), ids=repr)
def test_packaged_fingerprints_agree_with_the_reference_crc(schema: schemas.RegisteredSchema) -> None:
    assert schema.fingerprint == reference_crc64(schema.canonical_form.encode("utf-8"))
    assert schemas.fingerprint(schema.name, schema.version) == schema.fingerprint


@pytest.mark.parametrize("schema", schemas.all_schemas(), ids=repr)
def test_apache_avro_computes_the_same_canonical_form_and_fingerprint(
    schema: schemas.RegisteredSchema,
) -> None:
    # Apache avro's Python canonical form keeps {"type": "long"} for a primitive carrying other
    # attributes (logicalType, precision) where the reference Java implementation and fastavro write
    # "long" as the spec's [PRIMITIVES] step says; so hand it the primitives already simplified.
    parsed = avro_schema.parse(json.dumps(_simple_primitives(schema.definition)))

    assert parsed.canonical_form == schema.canonical_form
    assert parsed.fingerprint("CRC-64-AVRO") == schema.header[2:]


def test_fingerprints_are_unique_across_all_packaged_schemas() -> None:
    fingerprints = [schema.fingerprint for schema in schemas.all_schemas()]
    assert len(set(fingerprints)) == len(fingerprints)


def _simple_primitives(schema: Any) -> Any:
    """The spec's [PRIMITIVES] step: ``{"type": "long", ...}`` becomes ``"long"``, all through the schema."""
    if isinstance(schema, list):
        return [_simple_primitives(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") in PRIMITIVES:
        return schema["type"]
    simplified = dict(schema)
    if "fields" in schema:
        simplified["fields"] = [{**f, "type": _simple_primitives(f["type"])} for f in schema["fields"]]
    for key in ("items", "values"):
        if key in schema:
            simplified[key] = _simple_primitives(schema[key])
    return simplified
