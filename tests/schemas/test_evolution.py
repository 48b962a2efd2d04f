"""Schema evolution: each version reads data written by the previous one unless declared breaking."""

from __future__ import annotations

import io
import itertools
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError

from dualplane.core.settings import TopicSettings
from dualplane.schemas.catalog import BreakingVersion, ManifestEntry, load_manifest, schema_path, schema_paths
from dualplane.schemas.compatibility import check_backward
from dualplane.schemas.registry import default_registry

pytestmark = pytest.mark.unit

MANIFEST = load_manifest()
PAIRS = [(entry.name, old, new) for entry in MANIFEST.entries for old, new in entry.compatible_pairs()]


def sample(schema: Any, named: dict[str, Any], *, fill: bool) -> Any:
    """A value of a fastavro-parsed schema; ``fill`` picks non-null union branches, non-empty collections."""
    if isinstance(schema, str) and schema in named:
        return sample(named[schema], named, fill=fill)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"] if fill else schema
        return sample(branches[0], named, fill=fill)
    if isinstance(schema, dict):
        return _sample_complex(schema, named, fill=fill)
    return {
        "null": None,
        "boolean": True,
        "int": -7,
        "long": 2**40 + 3,
        "float": 1.5,
        "double": 2.25,
        "bytes": b"\x00\xffbytes",
        "string": "t\u00e9xt \u2603",
    }[schema]


def _sample_complex(schema: dict[str, Any], named: dict[str, Any], *, fill: bool) -> Any:
    logical = _sample_logical(schema)
    if logical is not None:
        return logical
    kind, count = schema["type"], 2 if fill else 0
    if kind in ("record", "error", "enum", "fixed"):
        named[schema["name"]] = schema
    builders = {
        "record": lambda: {f["name"]: sample(f["type"], named, fill=fill) for f in schema["fields"]},
        "array": lambda: [sample(schema["items"], named, fill=fill) for _ in range(count)],
        "map": lambda: {f"k{i}": sample(schema["values"], named, fill=fill) for i in range(count)},
        "enum": lambda: schema["symbols"][-1 if fill else 0],
        "fixed": lambda: b"\x01" * schema["size"],
    }
    builders["error"] = builders["record"]
    return builders.get(kind, lambda: sample(kind, named, fill=fill))()  # else: an unknown logical type


def _sample_logical(schema: dict[str, Any]) -> Any:
    if schema.get("logicalType") == "decimal":
        return Decimal("1234.5678").quantize(Decimal(1).scaleb(-schema.get("scale", 0)))
    if schema.get("logicalType") == "timestamp-millis":
        return datetime(2024, 5, 17, 9, 30, 12, 345000, tzinfo=UTC)
    return None


def assert_carried_over(written: Any, read: Any, where: str) -> None:
    """Everything written survives the reader; the reader may add fields (checked elsewhere)."""
    if isinstance(written, dict):
        assert isinstance(read, dict), where
        for key, value in written.items():
            assert key in read, f"{where}.{key} was dropped"
            assert_carried_over(value, read[key], f"{where}.{key}")
    elif isinstance(written, list):
        assert isinstance(read, list) and len(read) == len(written), where
        for index, (old, new) in enumerate(zip(written, read, strict=True)):
            assert_carried_over(old, new, f"{where}[{index}]")
    else:
        assert read == written, where


def test_every_manifest_version_has_its_file_and_every_file_is_listed() -> None:
    listed = {schema_path(entry.name, version) for entry in MANIFEST.entries for version in entry.versions}

    assert listed == schema_paths()


def test_every_manifest_entry_names_a_topic_setting_and_its_record() -> None:
    registry = default_registry()
    for entry in MANIFEST.entries:
        assert entry.topic_setting in TopicSettings.model_fields
        assert {registry.get(entry.name, v).full_name for v in entry.versions} == {entry.record}


@pytest.mark.parametrize("fill", [True, False], ids=["filled", "minimal"])
@pytest.mark.parametrize(("name", "old", "new"), PAIRS, ids=[f"{n}-v{o}-v{v}" for n, o, v in PAIRS])
def test_new_version_reads_data_written_with_the_previous_one(
    name: str, old: int, new: int, fill: bool
) -> None:
    registry = default_registry()
    writer, reader = registry.get(name, old), registry.get(name, new)
    record = sample(writer.parsed, {}, fill=fill)
    buffer = io.BytesIO()
    schemaless_writer(buffer, writer.parsed, record)
    buffer.seek(0)

    read = schemaless_reader(buffer, writer.parsed, reader.parsed)

    assert_carried_over(record, read, name)
    added = [f for f in reader.definition["fields"] if f["name"] not in record]
    for field in added:
        assert read[field["name"]] == field["default"], f"{name}.{field['name']} should take its default"


@pytest.mark.parametrize(("name", "old", "new"), PAIRS, ids=[f"{n}-v{o}-v{v}" for n, o, v in PAIRS])
def test_compatibility_checker_accepts_every_non_breaking_pair(name: str, old: int, new: int) -> None:
    registry = default_registry()

    assert check_backward(registry.get(name, old).definition, registry.get(name, new).definition) == []


CONSECUTIVE = [
    (entry, old, new) for entry in MANIFEST.entries for old, new in itertools.pairwise(entry.versions)
]


def test_each_version_is_declared_breaking_exactly_when_the_checker_finds_it_breaking() -> None:
    # Every consecutive pair is judged both ways: a version that breaks its readers must be declared
    # breaking (it moves to a new topic), and one declared breaking must really break. The manifest
    # declares none today, so this is what keeps a breaking change from slipping in undeclared.
    assert CONSECUTIVE, "the manifest has no schema with two versions: nothing would be checked"
    registry = default_registry()
    verdicts = {
        f"{entry.name} v{old}->v{new}": (
            bool(
                check_backward(
                    registry.get(entry.name, old).definition, registry.get(entry.name, new).definition
                )
            ),
            entry.is_breaking(new),
        )
        for entry, old, new in CONSECUTIVE
    }

    assert {pair: found for pair, (found, _) in verdicts.items()} == {
        pair: declared for pair, (_, declared) in verdicts.items()
    }


def test_the_checker_tells_a_declared_breaking_version_from_a_compatible_one() -> None:
    """The rule above with a breaking version declared: a manifest entry judged by the same code."""
    entry = ManifestEntry("probe", "dualplane.Probe", "records", (1, 2), (BreakingVersion(2, ".v2"),))
    broken = bool(check_backward(OLD_PROBE, NEW_PROBE))
    compatible = bool(check_backward(OLD_PROBE, OLD_PROBE))

    assert (broken, entry.is_breaking(2)) == (True, True)
    assert (compatible, entry.is_breaking(1)) == (False, False)
    assert entry.compatible_pairs() == []


OLD_PROBE = {
    "type": "record",
    "name": "Probe",
    "namespace": "dualplane",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "DONE", "LOST"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 4}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "size", "type": {"type": "fixed", "name": "Digest", "size": 16}},
    ],
}

NEW_PROBE = {
    "type": "record",
    "name": "Probe",
    "namespace": "dualplane",
    "fields": [
        {"name": "id", "type": "long"},  # string data cannot be read as long
        {"name": "count", "type": "long"},  # int -> long is a legal promotion
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "DONE"]}},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 2}},
        {"name": "note", "type": "string"},  # a null note has nowhere to go
        {"name": "size", "type": {"type": "fixed", "name": "Digest", "size": 32}},
        {"name": "owner", "type": "string"},  # no default: old data has no owner
    ],
}


def test_an_incompatible_pair_is_detected_with_every_problem_named() -> None:
    problems = check_backward(OLD_PROBE, NEW_PROBE)

    expected = {
        "Probe.id: string data cannot be read as long",
        "Probe.state: enum symbols ['LOST'] were removed and the enum has no default",
        "Probe.tags[]: string data cannot be read as int",
        "Probe.price: decimal (precision, scale) changed from (18, 4) to (18, 2)",
        "Probe.note: null data cannot be read as string",
        "Probe.size: fixed size changed from 16 to 32",
        "Probe.owner: new field without a default; old data has no value for it",
    }
    assert set(problems) == expected
    buffer = io.BytesIO()
    schemaless_writer(buffer, parse_schema(OLD_PROBE), sample(parse_schema(OLD_PROBE), {}, fill=True))
    buffer.seek(0)
    with pytest.raises(SchemaResolutionError):  # and fastavro indeed cannot read old data as new
        schemaless_reader(buffer, parse_schema(OLD_PROBE), parse_schema(NEW_PROBE))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("int", "long"),
        ("int", "double"),
        ("long", "float"),
        ("string", "bytes"),
        ("bytes", "string"),
        ("string", ["null", "string"]),
        (["null", "int"], ["null", "string", "long"]),
        ({"type": "map", "values": "int"}, {"type": "map", "values": "long"}),
        (
            {"type": "enum", "name": "E", "symbols": ["A", "B"]},
            {"type": "enum", "name": "E", "symbols": ["A"], "default": "A"},
        ),
    ],
)
def test_compatible_changes_pass(old: Any, new: Any) -> None:
    assert check_backward(old, new) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("long", "int"),
        ("double", "float"),
        (["null", "string"], "string"),
        (["null", "string", "int"], ["null", "string"]),
        ({"type": "array", "items": "string"}, {"type": "map", "values": "string"}),
        ({"type": "enum", "name": "E", "symbols": ["A"]}, {"type": "enum", "name": "F", "symbols": ["A"]}),
    ],
)
def test_incompatible_changes_fail(old: Any, new: Any) -> None:
    assert check_backward(old, new)


def test_renamed_field_with_an_alias_is_compatible() -> None:
    old = {"type": "record", "name": "R", "fields": [{"name": "colour", "type": "string"}]}
    new = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "color", "type": "string", "aliases": ["colour"]}],
    }

    assert check_backward(old, new) == []


def test_recursive_types_terminate() -> None:
    node = {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "value", "type": "int"},
            {"name": "next", "type": ["null", "Node"], "default": None},
        ],
    }
    wider = {**node, "fields": [{"name": "value", "type": "long"}, node["fields"][1]]}

    assert check_backward(node, wider) == []
    assert check_backward(wider, node) == ["Node.value: long data cannot be read as int"]


def test_an_invalid_schema_is_reported_not_raised() -> None:
    problems = check_backward(
        "string", {"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]}
    )

    assert len(problems) == 1 and "not valid Avro" in problems[0]
