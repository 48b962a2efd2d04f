"""The one rule for "this job is finished": idle, something done, quiet, and the extractor caught up."""

from __future__ import annotations

from collections import Counter

import pytest

from dualplane.control_plane.frontier.jobs import STALLED_AFTER_S, FinishRule, Verdict
from dualplane.control_plane.frontier.outcomes import JobOutcomes

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


def test_any_change_restarts_the_quiet_period() -> None:
    rule, clock, _ = rule_with([0])
    rule.finished(IDLE_DONE)
    clock.now = 2.5
    assert not rule.finished({**IDLE_DONE, "done": 6})
    clock.now = 5.0
    assert not rule.finished({**IDLE_DONE, "done": 6})
    clock.now = 5.5
    assert rule.finished({**IDLE_DONE, "done": 6})


def test_a_job_unmoved_past_the_stall_time_is_stalled_and_any_change_revives_it() -> None:
    """The one "stalled" (``status`` said so after 300 s, the demo after 90 s)."""
    busy = {**IDLE_DONE, "idle": False, "outstanding": 3}
    rule, clock, _ = rule_with([0])
    rule.judge(busy)
    clock.now = STALLED_AFTER_S
    assert not rule.judge(busy).stalled
    clock.now = STALLED_AFTER_S + 1
    assert rule.judge(busy).stalled and not rule.verdict.finished
    assert not rule.judge({**busy, "done": 6}).stalled
    clock.now = 2 * STALLED_AFTER_S + 2
    assert rule.judge({**busy, "done": 6}).stalled


def test_a_one_off_look_reads_the_stall_from_the_snapshot_and_a_finished_job_never_stalls() -> None:
    rule, _, _ = rule_with([0, 0])
    busy = {**IDLE_DONE, "idle": False, "outstanding": 3, "changed_at": 1000.0}
    assert not rule.judge_at(busy, 1000.0 + STALLED_AFTER_S).stalled
    assert rule.judge_at(busy, 1001.0 + STALLED_AFTER_S).stalled
    done = rule.judge_at({**IDLE_DONE, "changed_at": 1000.0}, 1001.0 + STALLED_AFTER_S)
    assert done.finished and not done.stalled


TURNED_AWAY = {"idle": True, "done": 0, "failed": 0, "dead_lettered": 0, "outstanding": 0, "backlog": 0,
               "seeded": 2, "out_of_scope": 1, "disallowed": 1}  # fmt: skip


def test_a_job_whose_seeds_were_all_turned_away_finishes_with_0_pages_and_says_why() -> None:
    """#27 P4: such a job runs no task, so no task ever ends; it must not wait out the timeout."""
    clock, asked = Clock(), []
    rule = FinishRule(lambda: asked.append(1) or 5, seeds=2, clock=clock)
    assert not rule.finished(TURNED_AWAY)
    clock.now = 3.0
    verdict = rule.judge(TURNED_AWAY)
    assert verdict.finished and verdict.pages == 0
    assert (
        verdict.why
        == "0 pages: the frontier turned every seed away (1 out of scope, 1 disallowed by robots.txt)"
    )
    assert asked == []  # no page, no record: another job's extractor lag is no reason to wait


def test_a_job_with_seeds_still_on_their_way_is_not_finished() -> None:
    rule, clock, _ = rule_with([0])
    rule = FinishRule(rule.extractor_lag, seeds=3, clock=clock)
    rule.finished(TURNED_AWAY)
    clock.now = 100.0
    verdict = rule.judge(TURNED_AWAY)
    assert not verdict.finished
    assert verdict.why == "2 of 3 seed(s) reached the frontier"


def test_the_verdict_names_what_is_awaited_and_what_was_done() -> None:
    rule, clock, _ = rule_with([4, 0])
    assert rule.judge(None).why.startswith("no progress published yet")
    busy = {**IDLE_DONE, "idle": False, "outstanding": 2, "backlog": 1}
    assert rule.judge(busy).why == "3 task(s) queued, in flight, retrying or in the backlog"
    rule.judge(IDLE_DONE)
    clock.now = 3.0
    pending = rule.judge(IDLE_DONE)
    assert (pending.finished, pending.records_pending) == (False, 4)
    assert pending.why == "the extractor has 4 raw page(s) to commit records for"
    clock.now = 4.0
    assert rule.judge(IDLE_DONE) == pending  # until Kafka is asked again, the lag is what is awaited
    clock.now = 6.0
    done = rule.judge(IDLE_DONE)
    assert done.finished and done.records_pending == 0
    assert done.why == "5 page(s) fetched, 0 failed, 0 dead-lettered; every record committed"


def test_a_one_off_look_reads_the_quiet_period_from_the_snapshot() -> None:
    rule, _, _ = rule_with([])
    snapshot = {**IDLE_DONE, "changed_at": 100.0}
    assert not rule.judge_at(snapshot, 102.0, lag=0).finished
    assert rule.judge_at(snapshot, 103.0, lag=0).finished
    assert not rule.judge_at(snapshot, 103.0, lag=1).finished


def _counted(outcomes: JobOutcomes, **snapshot: object) -> tuple[Verdict, list[tuple[str, float]]]:
    asked: list[tuple[str, float]] = []

    def count(job_id: str, since_s: float) -> JobOutcomes:
        asked.append((job_id, since_s))
        return outcomes

    rule = FinishRule(lambda: 0, outcomes=count)
    look = {**IDLE_DONE, "job_id": "j", "created_at": 50.0, "changed_at": 100.0, **snapshot}
    return rule.judge_at(look, 200.0, lag=0), asked


def test_a_job_whose_every_fetched_page_has_its_record_is_complete() -> None:
    verdict, asked = _counted(JobOutcomes(records=5, extraction_dead_letters=0))

    assert asked == [("j", 50.0)]  # the job's records, counted from its creation on
    assert (verdict.finished, verdict.complete, verdict.records, verdict.dead_lettered) == (True, True, 5, 0)
    assert verdict.why == (
        "5 page(s) fetched, 5 record(s) committed, 0 failed, 0 dead-lettered; "
        "every fetched page has its record"
    )


def test_redirects_and_unchanged_pages_owe_no_record() -> None:
    """Tasks done count redirects handed to the frontier and 304s; neither puts a page with a body
    on pages.raw, so a sample-site crawl whose /old/ paths redirect is complete (it exited 3)."""
    verdict, _ = _counted(JobOutcomes(records=3, extraction_dead_letters=0, with_body=3))

    assert (verdict.finished, verdict.complete, verdict.records) == (True, True, 3)
    assert verdict.why.endswith(
        "every fetched page has its record (2 without a body: redirects or unchanged pages)"
    )
    missing, _ = _counted(JobOutcomes(records=2, extraction_dead_letters=0, with_body=3))
    assert not missing.complete and missing.why.endswith("1 fetched page(s) without a record")


def test_pages_dead_lettered_at_extraction_make_a_finished_job_incomplete_and_say_why() -> None:
    reasons = Counter({"extraction (extract): UnknownExtractor: no plugin 'nope'": 3, "fetch: gave up": 1})
    verdict, _ = _counted(JobOutcomes(records=2, extraction_dead_letters=3, reasons=reasons), dead_lettered=1)

    assert (verdict.finished, verdict.complete, verdict.records, verdict.dead_lettered) == (True, False, 2, 4)
    assert verdict.why == (
        "5 page(s) fetched, 2 record(s) committed, 0 failed; 4 page(s) dead-lettered (1 at fetch, 3 at "
        "extraction), 3 fetched page(s) without a record: 3 x extraction (extract): UnknownExtractor: "
        "no plugin 'nope'; 1 x fetch: gave up"
    )


def test_the_outcomes_are_not_counted_before_the_job_is_otherwise_finished() -> None:
    asked: list[str] = []

    def count(job_id: str, _since_s: float) -> JobOutcomes:
        asked.append(job_id)
        return JobOutcomes(0, 0)

    rule = FinishRule(lambda: 2, outcomes=count)

    verdict = rule.judge_at({**IDLE_DONE, "job_id": "j", "changed_at": 100.0}, 200.0)

    assert not verdict.finished and asked == []
