"""The one rule for "this job is finished": idle, something done, quiet, and the extractor caught up."""

from __future__ import annotations

import pytest

from control_plane.frontier.jobs import FinishRule

pytestmark = pytest.mark.unit

IDLE_DONE = {"idle": True, "done": 5, "failed": 0, "dead_lettered": 0, "outstanding": 0, "backlog": 0}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def rule_with(lags: list[int], quiet_s: float = 3.0) -> tuple[FinishRule, Clock, list[int]]:
    clock, asked = Clock(), []

    def lag() -> int:
        asked.append(1)
        return lags.pop(0)

    return FinishRule(lag, quiet_s=quiet_s, clock=clock), clock, asked


def test_finished_only_after_the_quiet_period_and_a_zero_lag() -> None:
    rule, clock, asked = rule_with([0])
    assert not rule.finished(IDLE_DONE)  # first sight: the quiet period starts
    clock.now = 2.9
    assert not rule.finished(IDLE_DONE)
    assert asked == []  # Kafka is not asked before the rest holds
    clock.now = 3.0
    assert rule.finished(IDLE_DONE)
    assert rule.last_lag == 0


def test_a_lagging_extractor_restarts_the_quiet_period() -> None:
    rule, clock, asked = rule_with([7, 0])
    rule.finished(IDLE_DONE)
    clock.now = 3.0
    assert not rule.finished(IDLE_DONE)
    assert rule.last_lag == 7
    clock.now = 5.0
    assert not rule.finished(IDLE_DONE)  # quiet again for 2 s only
    clock.now = 6.0
    assert rule.finished(IDLE_DONE)
    assert len(asked) == 2


@pytest.mark.parametrize(
    "snapshot",
    [
        None,
        {**IDLE_DONE, "idle": False},
        {**IDLE_DONE, "done": 0},  # idle before anything ran: the seeds are still on their way
    ],
)
def test_not_finished_while_busy_or_before_anything_ended(snapshot: dict[str, object] | None) -> None:
    rule, clock, asked = rule_with([0])
    rule.finished(snapshot)
    clock.now = 100.0
    assert not rule.finished(snapshot)
    assert asked == []


def test_failed_or_dead_lettered_tasks_count_as_ended() -> None:
    rule, clock, _ = rule_with([0])
    snapshot = {**IDLE_DONE, "done": 0, "dead_lettered": 2}
    rule.finished(snapshot)
    clock.now = 3.0
    assert rule.finished(snapshot)


def test_any_change_restarts_the_quiet_period_and_stall_time() -> None:
    rule, clock, _ = rule_with([0])
    rule.finished(IDLE_DONE)
    clock.now = 2.5
    assert rule.unchanged_for_s() == 2.5
    rule.finished({**IDLE_DONE, "done": 6})
    assert rule.unchanged_for_s() == 0.0
    clock.now = 5.0
    assert not rule.finished({**IDLE_DONE, "done": 6})
    clock.now = 5.5
    assert rule.finished({**IDLE_DONE, "done": 6})
