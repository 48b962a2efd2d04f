"""``dualplane run``'s child processes (one extractor per core by default, or ``--processes N``):
what each is started with."""

from __future__ import annotations

import os

import pytest

from dualplane.processes import INSTANCE_ID_ENV, child_env, per_core_commands, usable_cores

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


def test_by_default_the_extractor_runs_once_per_core_and_the_rest_in_one_process() -> None:
    commands = per_core_commands(["frontier", "fetcher", "extractor"], 3, "info", shards=None)

    services = [command[command.index("run") + 1 : command.index("--log-level")] for command in commands]
    assert services == [["frontier", "fetcher"], ["extractor"], ["extractor"], ["extractor"]]
    # Each child is one process: it must not spread itself over the cores again.
    assert all(command[command.index("--processes") + 1] == "1" for command in commands)


def test_an_extractor_alone_runs_only_extractor_children() -> None:
    assert len(per_core_commands(["extractor"], 2, "info", shards=None)) == 2


def test_usable_cores_follow_the_cpu_affinity() -> None:
    assert usable_cores() == len(os.sched_getaffinity(0)) >= 1
