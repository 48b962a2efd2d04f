"""The schema registry and the manifest: loading, lookups, conflicts, topic routing of breaking versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dualplane import schemas
from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import TopicSettings
from dualplane.schemas.catalog import Manifest, load_manifest
from dualplane.schemas.exceptions import ManifestError, SchemaConflict, SchemaError, UnknownSchema
from dualplane.schemas.registry import SchemaRegistry

pytestmark = pytest.mark.unit


def record(fields: list[dict[str, Any]], name: str = "Probe", doc: str = "") -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "dualplane", "doc": doc, "fields": fields}


V1 = record([{"name": "a", "type": "string"}])
V2 = record([{"name": "a", "type": "string"}, {"name": "b", "type": "int", "default": 0}])


def write_catalog(root: Path, entry: dict[str, Any], files: dict[int, dict[str, Any]]) -> Path:
    (root / "probe").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"format": 1, "schemas": {"probe": entry}}))
    for version, definition in files.items():
        (root / "probe" / f"v{version}.avsc").write_text(json.dumps(definition))
    return root


def test_the_packaged_registry_holds_every_schema_version() -> None:
    found = [(schema.name, schema.version) for schema in schemas.all_schemas()]

    assert found == [
        ("change_event", 1),
        ("change_event", 2),
        ("dead_letter", 1),
        ("fetch_event", 1),
        ("fetch_event", 2),
        ("fetch_event", 3),
        ("page_record", 1),
        ("page_record", 2),
        ("page_record", 3),
        ("raw_page", 1),
        ("raw_page", 2),
        ("raw_page", 3),
        ("throttle_command", 1),
        ("throttle_command", 2),
    ]
    assert schemas.latest_version("page_record") == 3
    assert schemas.fingerprint("page_record") == schemas.fingerprint("page_record", 3)


def test_schema_errors_are_dualplane_errors() -> None:
    assert issubclass(SchemaError, DualplaneError)
    with pytest.raises(UnknownSchema, match="known: change_event, dead_letter, fetch_event"):
        schemas.latest_version("nope")


def test_packaged_topics_are_the_settings_topics() -> None:
    topics = TopicSettings()
    manifest = load_manifest()

    routed = {entry.name: entry.topic(entry.versions[-1], topics) for entry in manifest.entries}

    assert routed == {
        "fetch_event": topics.fetch_events,
        "raw_page": topics.pages_raw,
        "page_record": topics.records,
        "dead_letter": topics.dead_letters,
        "throttle_command": topics.throttle_state,
        "change_event": topics.changes,
    }


def test_a_breaking_version_and_its_successors_go_to_their_own_topic(tmp_path: Path) -> None:
    breaking = record([{"name": "a", "type": "long"}])
    later = record([{"name": "a", "type": "long"}, {"name": "c", "type": "string", "default": ""}])
    entry = {
        "record": "dualplane.Probe",
        "topic_setting": "records",
        "versions": [1, 2, 3],
        "breaking_versions": [{"version": 2, "topic_suffix": ".v2"}],
    }
    root = write_catalog(tmp_path, entry, {1: V1, 2: breaking, 3: later})

    probe = load_manifest(root).entry("probe")
    registry = SchemaRegistry.from_package(root)

    assert [probe.topic(v, TopicSettings()) for v in (1, 2, 3)] == ["records", "records.v2", "records.v2"]
    assert probe.compatible_pairs() == [(2, 3)]
    assert registry.versions("probe") == (1, 2, 3)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"versions": [1, 3]}, "without gaps"),
        ({"versions": []}, "without gaps"),
        ({"topic_setting": "nope"}, "not a TopicSettings field"),
        ({"record": ""}, "full name"),
        ({"breaking_versions": [{"version": 1, "topic_suffix": ".v1"}]}, "after 1"),
        ({"breaking_versions": [{"version": 2, "topic_suffix": ""}]}, "non-empty topic_suffix"),
    ],
)
def test_a_malformed_manifest_entry_is_named(entry: dict[str, Any], message: str) -> None:
    body = {"record": "dualplane.Probe", "topic_setting": "records", "versions": [1, 2], **entry}

    with pytest.raises(ManifestError, match=message):
        Manifest.parse({"schemas": {"probe": body}})


def test_a_listed_version_without_its_file_is_a_manifest_error(tmp_path: Path) -> None:
    entry = {"record": "dualplane.Probe", "topic_setting": "records", "versions": [1, 2]}
    root = write_catalog(tmp_path, entry, {1: V1})

    with pytest.raises(ManifestError, match="probe v2"):
        SchemaRegistry.from_package(root)


def test_a_version_renaming_its_record_is_refused(tmp_path: Path) -> None:
    entry = {"record": "dualplane.Probe", "topic_setting": "records", "versions": [1, 2]}
    root = write_catalog(tmp_path, entry, {1: V1, 2: record(V2["fields"], name="Other")})

    with pytest.raises(SchemaError, match="must keep its record name"):
        SchemaRegistry.from_package(root)


def test_registering_again_is_idempotent_but_a_version_never_changes() -> None:
    registry = SchemaRegistry()
    first = registry.register("probe", 1, V1)

    assert registry.register("probe", 1, json.dumps(V1)) is first
    with pytest.raises(SchemaConflict, match="a published version never changes"):
        registry.register("probe", 1, V2)
    assert registry.get("probe") is first


def test_a_version_differing_only_in_docs_or_defaults_is_refused() -> None:
    registry = SchemaRegistry()
    registry.register("probe", 1, V1)

    with pytest.raises(SchemaConflict, match="not only docs, defaults or logical types"):
        registry.register("probe", 2, record(V1["fields"], doc="better words"))


def test_invalid_avro_is_a_schema_error_naming_the_schema() -> None:
    with pytest.raises(SchemaError, match="probe v1 is not valid Avro"):
        SchemaRegistry().register("probe", 1, record([{"name": "a", "type": "nope"}]))


def test_lookups() -> None:
    registry = SchemaRegistry()
    v1, v2 = registry.register("probe", 1, V1), registry.register("probe", 2, V2)

    assert registry.get("probe") is v2
    assert registry.get("probe", 1) is v1
    assert registry.by_fingerprint(v1.fingerprint) is v1
    assert registry.find(12345) is None
    assert registry.with_record_name("dualplane.Probe") == (v1, v2)
    assert (registry.names(), len(registry)) == (("probe",), 2)
    assert repr(v1) == f"RegisteredSchema('probe', v1, 0x{v1.fingerprint:016x})"
    with pytest.raises(UnknownSchema, match=r"no version 3 here \(known: v1, v2\)"):
        registry.get("probe", 3)
