"""``dualplane run --processes N``: what each child process is started with."""

from __future__ import annotations

import pytest

from dualplane.processes import INSTANCE_ID_ENV, child_env

pytestmark = pytest.mark.unit


def test_child_i_serves_metrics_on_the_base_port_plus_i(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALPLANE_METRICS_PORT", "9464")

    ports = [child_env(index)["DUALPLANE_METRICS_PORT"] for index in range(3)]

    assert ports == ["9464", "9465", "9466"]


def test_without_a_metrics_port_children_serve_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DUALPLANE_METRICS_PORT", raising=False)

    assert "DUALPLANE_METRICS_PORT" not in child_env(2)


def test_each_child_gets_its_own_extractor_slot_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INSTANCE_ID_ENV, "slot")

    identities = [child_env(index)[INSTANCE_ID_ENV] for index in range(3)]

    assert identities == ["slot-0", "slot-1", "slot-2"]  # two sharing one would fence each other


def test_no_identity_is_made_up_when_none_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INSTANCE_ID_ENV, raising=False)

    assert INSTANCE_ID_ENV not in child_env(0)
