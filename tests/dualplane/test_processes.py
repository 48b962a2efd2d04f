"""``dualplane run --processes N``: each child gets its own metrics port."""

from __future__ import annotations

import pytest

from dualplane.processes import child_env

pytestmark = pytest.mark.unit


def test_child_i_serves_metrics_on_the_base_port_plus_i(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALPLANE_METRICS_PORT", "9464")

    ports = [child_env(index)["DUALPLANE_METRICS_PORT"] for index in range(3)]

    assert ports == ["9464", "9465", "9466"]


def test_without_a_metrics_port_children_serve_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DUALPLANE_METRICS_PORT", raising=False)

    assert "DUALPLANE_METRICS_PORT" not in child_env(2)
