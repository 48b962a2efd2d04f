"""Pausing a job: the shard's store keeps it (and its backlog) through the changelog, the rule calls
it paused and never stalled, a fetcher sends its tasks back until a resume reaches it either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.control_plane.fetcher.cancelling import FetcherCancels
from dualplane.control_plane.frontier.jobs import STALLED_AFTER_S, FinishRule
from dualplane.control_plane.frontier.store import FrontierState

pytestmark = pytest.mark.unit


def test_a_paused_jobs_backlog_is_kept_but_not_released_and_the_pause_survives_the_changelog(
    tmp_path: Path,
) -> None:
    state = FrontierState(tmp_path / "a.sqlite")
    for job in ("held", "other"):
        state.save_job(JobSpec(job_id=job))
        state.push_backlog("a.test", job, f'"{job}"')
        state.count(job, backlog=1)
    changes = state.changes()
    state.commit()

    assert state.pause_job("held", True, at=50.0) and not state.pause_job("nobody", True, at=1.0)
    assert state.pause_job("held", True, at=60.0)  # a second pause keeps the first one's time
    changes += state.changes()
    state.commit()
    restored = FrontierState(tmp_path / "b.sqlite")  # another machine, from the changelog alone
    for name, row in changes:
        restored.apply(name, row)
    for shard in (state, restored):
        assert shard.paused("held") and not shard.paused("other")
        assert shard.progress("held").paused_at == 50.0  # type: ignore[union-attr]
        assert [task for _, task in shard.backlog_for("a.test", 10)] == ['"other"']
        assert shard.backlog_domains("held") == ["a.test"]
        assert shard.progress("held").backlog == 1  # type: ignore[union-attr]

    assert state.pause_job("held", False, at=70.0)
    assert not state.paused("held") and state.progress("held").paused_at == 0  # type: ignore[union-attr]
    assert [task for _, task in state.backlog_for("a.test", 10)] == ['"held"', '"other"']


def test_a_paused_job_is_paused_never_stalled_nor_finished() -> None:
    rule = FinishRule(lambda: 0)
    snapshot = {"idle": False, "done": 3, "seeded": 5, "backlog": 9, "paused_at": 100.0, "changed_at": 100.0}

    verdict = rule.judge_at(snapshot, 100.0 + STALLED_AFTER_S * 2)

    assert (verdict.paused, verdict.finished, verdict.stalled, verdict.over) == (True, False, False, False)
    assert "paused after 3 page(s)" in verdict.why


class _View:
    def __init__(self) -> None:
        self.paused_jobs: set[str] = set()

    def start(self) -> _View:
        return self

    def cancelled(self, job_id: str) -> bool:
        return False

    def paused(self, job_id: str) -> bool:
        return job_id in self.paused_jobs

    def close(self) -> None:
        pass


def test_a_heard_pause_holds_until_the_view_agrees_and_a_resume_wins_over_a_lagging_view() -> None:
    view = _View()
    fetcher = FetcherCancels(view)
    fetcher.started("j")

    assert fetcher.heard_pause("j", True, ("reply", "c1")) == []  # a fetch of it still runs
    assert fetcher.paused("j") and not fetcher.paused("other")
    assert fetcher.ended("j") == [("reply", "c1")]

    view.paused_jobs.add("j")  # the snapshots caught up
    assert fetcher.paused("j")
    assert fetcher.heard_pause("j", False, ("", "")) == []  # a resume is not answered
    assert not fetcher.paused("j")  # though the view still says paused
    view.paused_jobs.clear()
    assert not fetcher.paused("j")

    view.paused_jobs.add("k")
    fetcher.heard_pause("k", False, ("", ""))
    fetcher.reset()  # a new connection: the view rules (a resume may have been missed meanwhile)
    assert fetcher.paused("k")
