"""`monitor create` durations: what a user types, in seconds, or a usage error saying how to write them."""

from __future__ import annotations

import pytest
import typer

from dualplane.cli.monitor_cmd import parse_duration_s


def test_durations_in_every_unit() -> None:
    assert [parse_duration_s(text, "--interval") for text in ("90", "90s", "15m", "6h", "7d")] == [
        90, 90, 900, 21_600, 604_800,
    ]  # fmt: skip


@pytest.mark.parametrize("text", ["", "0", "1w", "-5m", "soon"])
def test_a_bad_duration_is_a_usage_error(text: str) -> None:
    with pytest.raises(typer.BadParameter, match="no duration"):
        parse_duration_s(text, "--interval")
