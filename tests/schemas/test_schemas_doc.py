"""docs/schemas.md lists every schema of the manifest, with its record, topic and versions (#37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualplane.core.settings import Settings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]


def test_the_schemas_page_lists_every_schema_with_its_versions_and_topic() -> None:
    manifest = json.loads((ROOT / "schemas" / "avro" / "manifest.json").read_text())["schemas"]
    rows = {
        line.split("|")[1].strip(" `"): line
        for line in (ROOT / "docs" / "schemas.md").read_text().splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == set(manifest)
    topics = Settings().topics
    for name, entry in manifest.items():
        versions = entry["versions"]
        shown = f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]}-v{versions[-1]}"
        cells = [cell.strip(" `") for cell in rows[name].split("|")[1:-1]]
        assert cells[1] == entry["record"], name
        assert cells[2].startswith(f"{getattr(topics, entry['topic_setting'])}` ("), name
        assert cells[3] == shown, name
