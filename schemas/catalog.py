"""The packaged schema catalogue: ``avro/manifest.json`` and the ``avro/<name>/v<N>.avsc`` files it lists."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from dualplane.core.settings import TopicSettings
from dualplane.schemas.exceptions import ManifestError, UnknownSchema

MANIFEST = "manifest.json"


def package_root() -> Traversable:
    """The ``avro`` folder shipped inside the ``schemas`` package."""
    return files("dualplane.schemas") / "avro"


@dataclass(frozen=True)
class BreakingVersion:
    """A version readers of the previous one cannot read; it and its successors go to a new topic."""

    version: int
    topic_suffix: str


@dataclass(frozen=True)
class ManifestEntry:
    """One schema name: its versions, the topic setting it is written to and its breaking versions."""

    name: str
    record: str
    topic_setting: str
    versions: tuple[int, ...]
    breaking_versions: tuple[BreakingVersion, ...] = ()

    def is_breaking(self, version: int) -> bool:
        return any(breaking.version == version for breaking in self.breaking_versions)

    def compatible_pairs(self) -> list[tuple[int, int]]:
        """Consecutive ``(old, new)`` version pairs where ``new`` must read data written by ``old``."""
        pairs = zip(self.versions, self.versions[1:], strict=False)
        return [(old, new) for old, new in pairs if not self.is_breaking(new)]

    def topic(self, version: int, topics: TopicSettings) -> str:
        """The topic data written with ``version`` goes to.

        That is the topic named by ``topic_setting`` plus the suffix of the latest breaking version
        at or before ``version``, so readers of an older, incompatible version never see the data.
        """
        base = str(getattr(topics, self.topic_setting))
        suffixes = [b.topic_suffix for b in self.breaking_versions if b.version <= version]
        return base + (suffixes[-1] if suffixes else "")


@dataclass(frozen=True)
class Manifest:
    """Every schema name the package ships, in manifest order."""

    entries: tuple[ManifestEntry, ...]

    def entry(self, name: str) -> ManifestEntry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self.entries)
        raise UnknownSchema(f"no schema named {name!r} in the manifest; known: {known}")

    @classmethod
    def parse(cls, data: Any) -> Manifest:
        """Validate manifest JSON data; :class:`ManifestError` names the first thing wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("schemas"), dict):
            raise ManifestError("the schema manifest must be a JSON object with a 'schemas' object")
        return cls(tuple(_parse_entry(name, body) for name, body in data["schemas"].items()))


def _parse_entry(name: str, body: Any) -> ManifestEntry:
    where = f"manifest entry {name!r}"
    if not isinstance(body, dict):
        raise ManifestError(f"{where} must be an object")
    versions = body.get("versions")
    if not isinstance(versions, list) or versions != list(range(1, len(versions) + 1)) or not versions:
        raise ManifestError(f"{where}: versions must be [1, 2, ..., N] without gaps, got {versions!r}")
    setting = body.get("topic_setting")
    if setting not in TopicSettings.model_fields:
        known = ", ".join(TopicSettings.model_fields)
        raise ManifestError(f"{where}: topic_setting {setting!r} is not a TopicSettings field ({known})")
    record = body.get("record")
    if not isinstance(record, str) or not record:
        raise ManifestError(f"{where}: record must be the schema's full name, e.g. dualplane.PageRecord")
    breaking = tuple(_parse_breaking(where, item, versions) for item in body.get("breaking_versions", []))
    if len({b.topic_suffix for b in breaking}) != len(breaking):
        raise ManifestError(f"{where}: every breaking version needs its own topic_suffix")
    return ManifestEntry(name, record, str(setting), tuple(versions), breaking)


def _parse_breaking(where: str, item: Any, versions: list[int]) -> BreakingVersion:
    if not isinstance(item, dict):
        raise ManifestError(f"{where}: breaking_versions items must be objects {{version, topic_suffix}}")
    version, suffix = item.get("version"), item.get("topic_suffix")
    if version not in versions or version == 1:
        raise ManifestError(f"{where}: breaking version {version!r} must be a listed version after 1")
    if not isinstance(suffix, str) or not suffix:
        raise ManifestError(f"{where}: breaking version {version} needs a non-empty topic_suffix")
    return BreakingVersion(int(version), suffix)


def load_manifest(root: Traversable | None = None) -> Manifest:
    """Read and validate ``manifest.json`` under ``root`` (default: the packaged ``avro`` folder)."""
    path = (root or package_root()) / MANIFEST
    try:
        return Manifest.parse(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        raise ManifestError(f"cannot read the schema manifest {path}: {error}") from error


def schema_path(name: str, version: int) -> str:
    """Where version ``version`` of ``name`` lives, relative to the ``avro`` folder."""
    return f"{name}/v{version}.avsc"


def read_schema(name: str, version: int, root: Traversable | None = None) -> dict[str, Any]:
    """The JSON of ``<name>/v<version>.avsc`` under ``root`` (default: the packaged ``avro`` folder)."""
    path = (root or package_root()) / name / f"v{version}.avsc"
    try:
        definition = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ManifestError(f"cannot read schema {name} v{version} from {path}: {error}") from error
    if not isinstance(definition, dict):
        raise ManifestError(f"schema {name} v{version} ({path}) must be a JSON object (a record)")
    return definition


def schema_paths(root: Traversable | None = None) -> set[str]:
    """Every ``<name>/<file>.avsc`` under ``root``, listed in the manifest or not."""
    return {
        f"{folder.name}/{file.name}"
        for folder in (root or package_root()).iterdir()
        if folder.is_dir()
        for file in folder.iterdir()
        if file.name.endswith(".avsc")
    }
