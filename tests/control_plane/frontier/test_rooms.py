"""The frontier's message handling and periodic work are tables built from its rooms (issue #37).

A new message type or sweep is one entry in one room: these tests list them, so adding one shows
here, and two rooms claiming one message type (or one sweep name) fail at construction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from dualplane.brokers.amqp.messages import JobCancel
from dualplane.control_plane.frontier import Frontier
from dualplane.control_plane.frontier.rooms import Handler, Sweep, handler_table, run_due, sweep_list
from dualplane.core.limits import Limits, OnChange
from dualplane.core.settings import Settings
from dualplane.core.settings.stages import FrontierSettings

pytestmark = pytest.mark.unit


class NoLimits:
    """Stands in for the throttle's view: every domain at the defaults (nothing here asks it)."""

    def start(self, timeout_s: float = 30.0) -> object:
        return self

    def details(self, domain: str) -> Limits:
        return Limits(concurrency=1, delay_ms=0, paused=False)

    def domains(self) -> set[str]:
        return set()

    def subscribe(self, on_change: OnChange) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def frontier(tmp_path: Path) -> Iterator[Frontier]:
    settings = Settings(frontier=FrontierSettings(data_dir=tmp_path, snapshot_interval_s=3.0))
    made = Frontier.from_settings(settings, NoLimits(), shard=0)
    yield made
    made.close()


def test_the_handler_table_lists_every_message_type_and_its_room(frontier: Frontier) -> None:
    table = {kind.__name__: handler.__qualname__ for kind, handler in frontier.handlers_.items()}
    assert table == {
        "JobSpec": "Frontier._job",
        "DiscoveredBatch": "Frontier._discovered_batch",
        "DiscoveredUrl": "Frontier._discovered_url",
        "TaskReport": "Frontier._report",
        "TaskReports": "Frontier._reports",
        "Wake": "_woken",
        "JobCancel": "JobControl.cancel",
        "JobPause": "JobControl.pause",
        "MonitorSpec": "Monitors.save",
        "MonitorCommand": "MonitorRoom.command",
    }


def test_the_sweeps_are_a_list_of_periods_and_work(frontier: Frontier) -> None:
    listed = [(sweep.name, sweep.when, sweep.every_s, sweep.run.__qualname__) for sweep in frontier.sweeps_]
    assert listed == [
        ("standby wake", "standby", 10.0, "Frontier._standby_wake"),
        ("warm", "standby", 5.0, "Frontier._warm"),
        ("permit changes", "owner", 0.0, "Frontier.sweeps.<locals>.<lambda>"),
        ("permits", "owner", 1.0, "Frontier.sweeps.<locals>.<lambda>"),
        ("backlog", "owner", 1.0, "Frontier._release_backlogs"),
        ("handled", "owner", 60.0, "Frontier._forget_old_handled"),
        ("snapshot", "commit", 3.0, "Frontier._hold_job_snapshots"),  # DUALPLANE_FRONTIER_SNAPSHOT_INTERVAL_S
        ("due", "owner", 1.0, "MonitorRoom.take_due"),
        ("monitor snapshot", "commit", 2.0, "MonitorRoom.hold_snapshots"),
    ]


class Room:
    def __init__(self, kinds: Mapping[type, Handler], sweeps: Sequence[Sweep] = ()) -> None:
        self.kinds, self.sweeps_ = kinds, sweeps

    def handlers(self) -> Mapping[type, Handler]:
        return self.kinds

    def sweeps(self) -> Sequence[Sweep]:
        return self.sweeps_


def test_a_message_type_has_one_owner_and_a_sweep_one_name() -> None:
    with pytest.raises(ValueError, match="JobCancel has two handlers"):
        handler_table([Room({JobCancel: print}), Room({JobCancel: repr})])
    with pytest.raises(ValueError, match="two sweeps share a name"):
        sweep_list([Room({}, [Sweep("x", 1.0, list)]), Room({}, [Sweep("x", 2.0, list)])])


def test_a_sweep_runs_once_per_period_or_when_asked() -> None:
    runs: list[float] = []
    sweep = Sweep("s", 10.0, lambda: runs.append(now))
    for now in (10.0, 15.0, 19.9, 20.0, 25.0):
        run_due([sweep], "owner", now)
    assert runs == [10.0, 20.0]
    sweep.ask(27.0)
    for now in (26.0, 27.5, 28.0, 30.0):
        run_due([sweep], "owner", now)
    assert runs == [10.0, 20.0, 27.5, 30.0]  # the asked run did not restart the period
    run_due([sweep], "standby", 100.0)  # another phase's tick leaves it alone
    assert runs == [10.0, 20.0, 27.5, 30.0]
