"""Cancelling a job: the shard's store and changelog keep it, the rule calls it cancelled, the
fetchers drop its queued tasks unfetched."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import CrawlTask, JobSpec
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.control_plane.fetcher.runner import FetchResult, TaskRunner
from dualplane.control_plane.frontier.cancels import CancelledJobsView
from dualplane.control_plane.frontier.client import JobClient
from dualplane.control_plane.frontier.exceptions import UnknownJob
from dualplane.control_plane.frontier.jobs import STALLED_AFTER_S, FinishRule
from dualplane.control_plane.frontier.store import FrontierState
from dualplane.data_plane.throttle.view import ThrottleView
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier


@pytest.mark.unit
def test_a_cancel_ends_the_jobs_tasks_and_backlog_and_comes_back_from_the_changelog(tmp_path: Path) -> None:
    state = FrontierState(tmp_path / "a.sqlite")
    state.save_job(JobSpec(job_id="j"))
    state.task_issued("t1", "j", "a.test")
    state.task_issued("t2", "j", "a.test")
    state.task_reported("t2", "j", "a.test", "done")
    state.push_backlog("a.test", "j", "{}")
    state.count("j", backlog=1)
    changes = state.changes()
    state.commit()
    assert state.cancel_job("j", at=1234.0) and not state.cancel_job("nobody", at=1.0)
    changes += state.changes()
    state.commit()
    restored = FrontierState(tmp_path / "b.sqlite")  # another machine, from the changelog alone
    for name, row in changes:
        restored.apply(name, row)
    for progress in (state.progress("j"), restored.progress("j")):
        assert progress is not None
        assert (progress.cancelled_at, progress.cancelled, progress.done, progress.backlog) == (
            1234.0,
            1,
            1,
            0,
        )
        assert progress.idle
    assert state.domain("a.test")[0] == 0  # the cancelled task's slot is free
    assert not state.task_reported("t1", "j", "a.test", "done")  # a late report changes nothing
    assert state.progress("j").cancelled == 1  # type: ignore[union-attr]


@pytest.mark.unit
def test_a_cancelled_job_is_cancelled_not_finished_and_never_stalled() -> None:
    rule = FinishRule(lambda: 0)
    snapshot = {"idle": True, "done": 3, "seeded": 5, "cancelled_at": 100.0, "changed_at": 100.0}
    verdict = rule.judge_at(snapshot, 100.0 + STALLED_AFTER_S * 2)
    assert (verdict.cancelled, verdict.finished, verdict.stalled, verdict.over) == (True, False, False, True)
    assert "cancelled after 3 page(s)" in verdict.why


@pytest.mark.integration
def test_a_cancelled_jobs_queued_tasks_are_dropped_unfetched(control_plane: ControlPlaneFactory) -> None:
    settings = control_plane.settings(frontier_shards=1)
    settings = settings.model_copy(  # 2 tasks queued for the one site, the rest in the backlog
        update={
            "frontier": settings.frontier.model_copy(
                update={"snapshot_interval_s": 0.2, "outstanding_per_slot": 2}
            ),
            "limits": settings.limits.model_copy(update={"domain_concurrency": 1}),
        }
    )
    seeds = [f"http://a.test/{i}" for i in range(12)]
    frontier = RunningFrontier(settings).start()
    jobs = JobClient(settings)
    try:
        jobs.submit(JobSpec(job_id="stop-me", obey_robots=False), seeds)
        frontier.wait_progress_at_least("stop-me", "seeded", len(seeds), timeout_s=30)
        before = frontier.progress("stop-me")
        assert int(before["queued"]) > 0 and int(before["backlog"]) > 0, before  # type: ignore[call-overload]
        queued = frontier.lane_depth()
        jobs.cancel("stop-me")
        _, verdict = jobs.wait("stop-me", timeout_s=30, every_s=0.2)
        assert verdict.cancelled and not verdict.finished, verdict
        after = frontier.wait_progress("stop-me", backlog=0, queued=0, cancelled=int(before["queued"]))  # type: ignore[call-overload]
        assert after["idle"]
    finally:
        frontier.stop()
    fetched: list[str] = []

    async def work(task: CrawlTask) -> FetchResult:
        fetched.append(task.url)
        return FetchResult(Outcome.OK)

    runner = TaskRunner(settings, work, ThrottleView(settings), cancels=CancelledJobsView(settings))
    consumer = runner.consumer()
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    try:
        assert queued > 0
        assert wait_for(lambda: frontier.lane_depth() == 0, 30, 0.2)
        time.sleep(0.5)  # the acks' commit (every 50 ms)
    finally:
        consumer.stop()
        thread.join(15)
        runner.close()
    assert fetched == []
    assert frontier.lane_depth() == 0  # acked, not merely delivered: an unacked task comes back on stop


@pytest.mark.integration
def test_a_cancel_of_a_job_no_shard_reported_is_refused_unless_forced(
    control_plane: ControlPlaneFactory,
) -> None:
    # A mistyped id must not be "cancelled" silently: a cancel is final, so that id could never run.
    jobs = JobClient(control_plane.settings(frontier_shards=1))
    with pytest.raises(UnknownJob, match="no frontier shard has published progress for job 'no-such-job'"):
        jobs.cancel("no-such-job")
    jobs.cancel("no-such-job", force=True)  # a job submitted a moment ago, before its first snapshot
