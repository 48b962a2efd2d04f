"""Job snapshots carry a rate over the last window and when the counters last moved; ETA follows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from dualplane.control_plane.frontier.jobs import JobSnapshots, eta_s

pytestmark = pytest.mark.unit


@dataclass
class Counters:
    """Stands in for FrontierState: only ``progress(job).as_dict()`` is read."""

    values: dict[str, Any] = field(default_factory=dict)

    def progress(self, job_id: str) -> Counters | None:
        return self if job_id == "j" else None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def snapshot_at(snapshots: JobSnapshots, state: Counters) -> dict[str, Any]:
    snapshots.mark("j")
    records = snapshots.due(state)  # type: ignore[arg-type]
    snapshots.published()
    ((topic, key, value),) = records
    assert (topic, key) == ("progress", "j")
    return dict(json.loads(value))


def test_rate_counts_finished_tasks_per_second_and_eta_divides_what_is_left() -> None:
    clock = Clock()
    snapshots = JobSnapshots("progress", shard=0, clock=clock)
    state = Counters({"done": 0, "failed": 0, "outstanding": 100, "backlog": 0, "updated_at": 1.0})
    first = snapshot_at(snapshots, state)
    assert first["rate_per_s"] == 0.0 and eta_s(first) is None  # nothing finished yet: no ETA
    clock.now += 10
    state.values.update(done=18, failed=2, outstanding=80)
    second = snapshot_at(snapshots, state)
    assert second["rate_per_s"] == 2.0  # 20 tasks in 10 s
    assert eta_s(second) == 40.0
    assert second["changed_at"] == clock.now and second["shard"] == 0


def test_changed_at_stays_when_only_the_update_time_moves_and_a_done_job_has_eta_zero() -> None:
    clock = Clock()
    snapshots = JobSnapshots("progress", shard=3, clock=clock)
    state = Counters({"done": 5, "outstanding": 0, "backlog": 0, "updated_at": 1.0})
    first = snapshot_at(snapshots, state)
    clock.now += 40
    state.values["updated_at"] = 2.0
    later = snapshot_at(snapshots, state)
    assert later["changed_at"] == first["changed_at"] == 1000.0
    assert later["published_at"] == 1040.0 and eta_s(later) == 0.0


def test_nothing_marked_gives_nothing_to_write() -> None:
    snapshots = JobSnapshots("progress", shard=0)
    assert snapshots.due(Counters()) == []  # type: ignore[arg-type]
