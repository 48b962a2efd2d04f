"""docs/configuration.md lists every setting: a new field of ``Settings`` without a line there fails.

A table row may name several variables of one section, the first in full and the others by their
tail (`DUALPLANE_FETCH_CONNECT_TIMEOUT_S`, `_READ_TIMEOUT_S`): a tail stands for the first name's
section prefix followed by it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dualplane.core.settings import env_names

pytestmark = pytest.mark.unit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
CODE = re.compile(r"`([A-Z0-9_]+)`")


def listed_names(page: str) -> set[str]:
    names: set[str] = set()
    for line in page.splitlines():
        if not line.startswith("| `DUALPLANE_"):
            continue
        first_cell = line.split("|")[1]
        codes = CODE.findall(first_cell)
        full = [code for code in codes if code.startswith("DUALPLANE_")]
        parts = full[0].split("_")
        prefixes = ["_".join(parts[:i]) for i in range(2, len(parts))]
        names.update(full)
        for tail in (code for code in codes if code.startswith("_")):
            names.update(prefix + tail for prefix in prefixes)
    return names | set(re.findall(r"DUALPLANE_[A-Z0-9_]+", page))


def test_every_setting_is_on_the_configuration_page() -> None:
    missing = sorted(env_names() - listed_names(PAGE.read_text(encoding="utf-8")))
    assert missing == [], f"add these to docs/configuration.md: {', '.join(missing)}"


def test_the_tail_shorthand_is_read_as_the_first_name_s_section() -> None:
    row = "| `DUALPLANE_FETCH_CONNECT_TIMEOUT_S`, `_READ_TIMEOUT_S` | 10, 30 | timeouts |"
    assert {"DUALPLANE_FETCH_CONNECT_TIMEOUT_S", "DUALPLANE_FETCH_READ_TIMEOUT_S"} <= listed_names(row)
    assert "DUALPLANE_FETCH_WRITE_TIMEOUT_S" not in listed_names(row)
