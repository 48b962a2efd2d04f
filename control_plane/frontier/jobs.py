"""Job progress: each frontier shard publishes snapshots, anyone reads them, one rule says "done".

Snapshots live in the compacted Kafka topic ``DUALPLANE_TOPIC_JOB_PROGRESS`` (``jobs.progress``):
partition ``i`` holds shard ``i``'s newest snapshot of each job, keyed by job id, as JSON. A shard
writes the snapshots of the jobs that changed (at most every ``DUALPLANE_FRONTIER_SNAPSHOT_INTERVAL_S``)
in the same Kafka transaction as its changelog, so they are fenced with it and never run ahead of
the state. Compaction keeps one record per job and shard however long a job runs, and nothing is
left to clean up when it ends: a thousand finished jobs are a thousand small records, not a
thousand queues (the one-slot RabbitMQ queue per job and shard this replaced piled up).

A snapshot carries the shard's counters (:class:`~control_plane.frontier.store.JobProgress`) and
``rate_per_s`` (tasks finished per second over the last ``RATE_WINDOW_S``), ``changed_at`` (when a
counter last moved) and ``published_at``. :class:`~control_plane.frontier.progress.ProgressReader`
follows the topic and adds the shards up; :func:`eta_s` and :class:`FinishRule` (with its
:class:`Verdict`) answer the questions the CLI, the demo, the report and the tests ask, so none
of them decides for itself.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.lag import extractor_lag
from dualplane.control_plane.frontier.changelog import ensure_changelog
from dualplane.control_plane.frontier.outcomes import JobOutcomes, job_outcomes
from dualplane.core.settings import Settings

if TYPE_CHECKING:  # readers of progress (`dualplane status`) need no frontier store
    from dualplane.control_plane.frontier.store import FrontierState

RATE_WINDOW_S = 30.0
# A job not finished whose counters have not moved for this long is stalled: something is broken (its
# frontier state lost, no fetcher or extractor running). Healthy jobs move far more often: every task
# that ends moves a counter. Only a job whose last tasks all wait in a retry tier longer than this
# (DUALPLANE_QUEUE_RETRY_TIERS: 10 min by default) is quiet longer while healthy.
STALLED_AFTER_S = 300.0
# Compaction only cleans closed segments: roll them hourly so the topic stays near one record per job.
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": "3600000", "min.cleanable.dirty.ratio": "0.1"}

SideRecord = tuple[str, str, bytes]
"""A record for another topic in a changelog transaction: (topic, key, value)."""


def ensure_progress_topic(settings: Settings) -> None:
    """Create the compacted progress topic with a partition per frontier shard (or add the missing ones)."""
    topic, shards = settings.topics.job_progress, settings.queues.frontier_shards
    clients.ensure_topics(settings.kafka, [topic], partitions=shards, config=TOPIC_CONFIG)
    ensure_changelog(settings.kafka, topic, shards)


class JobSnapshots:
    """Remembers which jobs changed on one shard and gives their snapshots when asked."""

    def __init__(self, topic: str, shard: int, clock: Callable[[], float] = time.time) -> None:
        self.topic = topic
        self.shard = shard
        self.clock = clock
        self.marked: set[str] = set()
        self.pending: set[str] = set()  # given by due(), not yet committed
        self._finished: dict[str, deque[tuple[float, int]]] = {}  # job -> (time, finished tasks)
        self._last: dict[str, dict[str, Any]] = {}  # job -> counters last published, and when they moved
        self._robots_waiting: dict[str, int] = {}  # job -> its discovery messages waiting for robots.txt
        self._robots_retrying: dict[str, int] = {}  # job -> those of them whose robots.txt was unreachable
        self._due_waiting: dict[str, int] = {}  # a monitor's visit job -> its due URLs not yet made tasks

    def mark(self, job_id: str) -> None:
        self.marked.add(job_id)

    def mark_all(self, job_ids: list[str]) -> None:
        self.marked.update(job_ids)

    def robots_waiting(self, counts: dict[str, int], retrying: dict[str, int] | None = None) -> None:
        """Each job's discovery messages that wait for a robots.txt: such a job is not idle, or
        ``crawl --wait`` could call it finished while its next URLs wait for their site's rules;
        ``retrying``: those of them waiting for a robots.txt that was unreachable, to be asked again."""
        retrying = retrying or {}
        changed = {job for job in counts.keys() | self._robots_waiting.keys() | self._robots_retrying.keys()
                   if counts.get(job) != self._robots_waiting.get(job)
                   or retrying.get(job) != self._robots_retrying.get(job)}  # fmt: skip
        self.marked |= changed
        self._robots_waiting = dict(counts)
        self._robots_retrying = dict(retrying)

    def due_waiting(self, counts: dict[str, int]) -> None:
        """Each monitor visit's due URLs not made tasks yet (no room in their domains now): such a visit
        is not idle, or it would look finished between two passes over the schedule."""
        changed = {job for job in counts.keys() | self._due_waiting.keys()
                   if counts.get(job) != self._due_waiting.get(job)}  # fmt: skip
        self.marked |= changed
        self._due_waiting = dict(counts)

    def due(self, state: FrontierState) -> list[SideRecord]:
        """The snapshots of the jobs marked since the last :meth:`published` (state as of now), to
        write with a changelog transaction; jobs marked later wait for the next call."""
        self.pending |= self.marked
        self.marked = set()
        now = self.clock()
        records = []
        for job_id in sorted(self.pending):
            progress = state.progress(job_id)
            if progress is not None:
                counters = {**progress.as_dict(), "robots_waiting": self._robots_waiting.get(job_id, 0)}
                counters["robots_retrying"] = self._robots_retrying.get(job_id, 0)
                counters["due_waiting"] = self._due_waiting.get(job_id, 0)
                if counters["robots_waiting"] or counters["due_waiting"]:
                    counters["idle"] = False
                snapshot = {**counters, **self._extra(job_id, counters, now)}
                records.append((self.topic, job_id, json.dumps(snapshot).encode()))
        return records

    def published(self) -> None:
        """The snapshots :meth:`due` gave are committed."""
        self.pending.clear()

    def reset(self) -> None:
        """This process no longer owns the shard: the next owner publishes what changed."""
        self.marked.clear()
        self.pending.clear()

    def _extra(self, job_id: str, counters: dict[str, Any], now: float) -> dict[str, Any]:
        finished = finished_count(counters)
        history = self._finished.setdefault(job_id, deque())
        history.append((now, finished))
        while len(history) > 2 and now - history[1][0] >= RATE_WINDOW_S:
            history.popleft()
        elapsed = now - history[0][0]
        rate = (finished - history[0][1]) / elapsed if elapsed > 0 else 0.0
        moved = {key: value for key, value in counters.items() if key != "updated_at"}
        last = self._last.get(job_id)
        changed_at = now if last is None or last["counters"] != moved else last["changed_at"]
        self._last[job_id] = {"counters": moved, "changed_at": changed_at}
        return {"rate_per_s": round(rate, 3), "changed_at": changed_at, "published_at": now,
                "shard": self.shard}  # fmt: skip


FINISHED_STAGES = ("done", "failed", "dead_lettered")
"""Counters of tasks that reached an end: how much of a job is behind it."""


def finished_count(snapshot: dict[str, Any]) -> int:
    """Tasks of the job that reached an end (done, failed or dead-lettered)."""
    return sum(int(snapshot.get(key, 0)) for key in FINISHED_STAGES)


def remaining(snapshot: dict[str, Any]) -> int:
    """Tasks known and not finished: queued, in flight, retrying, or waiting in the backlog."""
    return int(snapshot.get("outstanding", 0)) + int(snapshot.get("backlog", 0))


def eta_s(snapshot: dict[str, Any]) -> float | None:
    """Seconds until the tasks known now are finished, at the current rate (links found meanwhile
    add work, so it is a lower bound); None while nothing finishes."""
    rate = float(snapshot.get("rate_per_s", 0.0))
    left = remaining(snapshot)
    if left == 0:
        return 0.0
    return left / rate if rate > 0 else None


REJECTIONS = {
    "out_of_scope": "out of scope",
    "disallowed": "disallowed by robots.txt",
    "over_limit": "over the job's page limit",
    "invalid": "not valid URLs",
    "duplicates": "duplicates",
}
"""Funnel counters of URLs the frontier turned away, as a finished job's summary names them."""


@dataclass(frozen=True)
class Verdict:
    """:class:`FinishRule`'s answer about one job: finished or not, and ``why`` in a user's words
    (what it did when finished, what is still awaited when not)."""

    finished: bool
    why: str
    pages: int = 0  # tasks done: pages fetched
    records_pending: int | None = None  # the extractor's lag on pages.raw when asked, else None
    stalled: bool = False  # not finished, and no counter moved for the rule's ``stalled_after_s``
    cancelled: bool = False  # ``dualplane job cancel``: over, but not finished
    paused: bool = False  # ``dualplane job pause``: held on purpose, so neither moving nor stalled
    # Finished, and every fetched page has its record and none ended in a dead letter. False only when
    # the rule counted the job's outcomes (``outcomes`` given) and some page has no record.
    complete: bool = True
    records: int | None = None  # the job's records committed, when counted
    dead_lettered: int = 0  # pages of the job that ended in a dead letter (fetch and extraction)

    @property
    def over(self) -> bool:
        """Nothing more will come of the job: finished or cancelled (a stalled job may still move)."""
        return self.finished or self.cancelled


class FinishRule:
    """When a job is finished: the one rule ``crawl --wait``, ``status``, the demo, the report and
    the tests ask, so that none of them decides for itself.

    A job has pages fetched and records committed, and is finished only when both are complete:

    * pages: the frontier calls it idle (nothing queued, in flight, retrying or in the backlog, on
      every shard), and either a task reached an end or every seed reached the frontier and was turned
      away (out of scope, disallowed by robots.txt…): such a job finishes with 0 pages, and says why.
      ``seeds`` is how many seeds were submitted (``crawl --wait`` knows); without it, one seed seen
      is taken as all of them.
    * records: the extractor's lag on ``pages.raw`` is 0, so every raw page is extracted and its
      record committed (the extractor commits offsets and records in one transaction). Idle at the
      frontier says the pages are fetched (their links reached it from the fetcher), not that their
      records are there. The lag
      is the whole topic's, not the job's: while other jobs' pages wait, this one waits too, which
      can be late but never early.

    A job not finished whose counters have not moved for ``stalled_after_s`` is *stalled*
    (:attr:`Verdict.stalled`): ``status`` shows it so, and followers give up on it. A job cancelled on
    any shard (its snapshot's ``cancelled_at``) is neither: :attr:`Verdict.cancelled`, at once.

    Once both hold, ``outcomes`` (if given: :func:`~control_plane.frontier.outcomes.job_outcomes`,
    as :meth:`from_settings` wires it) counts the job's records and the pages that ended in a dead
    letter, at fetch (the job's ``dead_lettered`` counter) or at extraction (the Kafka dead letters): a
    job is *complete* (:attr:`Verdict.complete`) when every fetched page has its record and none was
    dead-lettered; otherwise its verdict is finished but not complete, and says how many pages were
    dead-lettered and why (``crawl --wait`` exits 3).

    Both must have held, counters unmoved, for ``quiet_s``. ``extractor_lag`` is asked only once the
    rest holds (it queries Kafka). Followers feed every snapshot to :meth:`judge` (or
    :meth:`finished`); a one-off look (``status``) asks :meth:`judge_at`, which reads "unmoved for
    ``quiet_s``" from the snapshot's ``changed_at``.
    """

    def __init__(
        self,
        extractor_lag: Callable[[], int],
        *,
        quiet_s: float = 3.0,
        seeds: int | None = None,
        stalled_after_s: float = STALLED_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
        outcomes: Callable[[str, float], JobOutcomes] | None = None,
    ) -> None:
        self.extractor_lag = extractor_lag
        self.outcomes = outcomes
        self.quiet_s = quiet_s
        self.seeds = seeds
        self.stalled_after_s = stalled_after_s
        self.clock = clock
        self.last: dict[str, Any] | None = None
        self.last_lag: int | None = None
        self.verdict = Verdict(False, "no progress read yet")
        self.changed_at = clock()  # when the snapshot last changed
        self._since = self.changed_at  # start of the current quiet period

    @classmethod
    def from_settings(
        cls, settings: Settings, *, quiet_s: float = 3.0, seeds: int | None = None
    ) -> FinishRule:
        """The rule with the extractor's lag on ``pages.raw`` read from Kafka, and the job's outcomes
        counted on the brokers once it is otherwise finished."""
        return cls(
            lambda: extractor_lag(settings),
            quiet_s=quiet_s,
            seeds=seeds,
            outcomes=lambda job_id, since_s: job_outcomes(settings, job_id, since_s),
        )

    @classmethod
    def for_view(cls, lag: int | None, settings: Settings | None = None) -> FinishRule:
        """The rule for a view of many jobs that read the extractor's ``lag`` once (``status``): None
        when Kafka did not say (judged as 0; the view says the records are unknown). With
        ``settings``, a finished job's records and dead letters are counted on the brokers."""
        if settings is None:
            return cls(lambda: lag or 0)
        return cls(lambda: lag or 0, outcomes=lambda job_id, since_s: job_outcomes(settings, job_id, since_s))

    def finished(self, snapshot: dict[str, Any] | None) -> bool:
        """Whether the job is finished, given its newest snapshot (None: not published yet)."""
        return self.judge(snapshot).finished

    def judge(self, snapshot: dict[str, Any] | None) -> Verdict:
        """The verdict on the job's newest snapshot (None: not published yet), for followers."""
        now = self.clock()
        moved = _moved(snapshot, self.last)
        if moved:
            self.changed_at = self._since = now
        self.last = snapshot
        quiet_s = now - self._since
        if not moved and self.verdict.records_pending and quiet_s < self.quiet_s:
            return self.verdict  # still the extractor's lag: Kafka is asked again once quiet
        self.verdict = self._stalled(self._judge(snapshot, quiet_s, None), now - self.changed_at)
        if self.verdict.records_pending:
            self._since = now  # quiet again before asking Kafka once more
        return self.verdict

    def finished_at(self, snapshot: dict[str, Any], now_s: float, lag: int | None = None) -> bool:
        """Whether a job whose snapshot this is was finished at wall-clock time ``now_s``."""
        return self.judge_at(snapshot, now_s, lag).finished

    def judge_at(self, snapshot: dict[str, Any], now_s: float, lag: int | None = None) -> Verdict:
        """The verdict on a job whose snapshot this is, at wall-clock time ``now_s`` (``lag``: the
        extractor's, if already known; asked otherwise)."""
        quiet_s = now_s - float(snapshot.get("changed_at") or snapshot.get("updated_at") or now_s)
        return self._stalled(self._judge(snapshot, quiet_s, lag), quiet_s)

    def _stalled(self, verdict: Verdict, unchanged_s: float) -> Verdict:
        """``verdict``, marked stalled when the job is not finished and unmoved too long."""
        stalled = not verdict.over and not verdict.paused and unchanged_s > self.stalled_after_s
        return replace(verdict, stalled=True) if stalled else verdict

    def _judge(self, snapshot: dict[str, Any] | None, quiet_s: float, lag: int | None) -> Verdict:
        held = _held(snapshot)
        if held is not None:
            return held
        waiting = self._pages_waiting(snapshot)
        if snapshot is None or waiting is not None:
            return Verdict(False, waiting or "no progress published yet")
        pages = int(snapshot.get("done", 0))
        if quiet_s < self.quiet_s:
            return Verdict(False, f"settling: no counter may move for {self.quiet_s:g} s", pages)
        if finished_count(snapshot) == 0:  # no task ever ran: no page, no record to wait for
            return Verdict(True, f"0 pages: {_turned_away(snapshot)}", 0)
        self.last_lag = lag = self.extractor_lag() if lag is None else lag
        if lag:
            return Verdict(False, f"the extractor has {lag} raw page(s) to commit records for", pages, lag)
        return self._ended(snapshot, pages)

    def _ended(self, snapshot: dict[str, Any], pages: int) -> Verdict:
        """The verdict on a job whose pages are fetched and whose records are committed."""
        failed, dead = int(snapshot.get("failed", 0)), int(snapshot.get("dead_lettered", 0))
        job_id = snapshot.get("job_id")
        if self.outcomes is not None and isinstance(job_id, str):
            outcomes = self.outcomes(job_id, float(snapshot.get("created_at") or 0))
            return _counted(pages, failed, dead, outcomes)
        why = f"{pages} page(s) fetched, {failed} failed, {dead} dead-lettered; every record committed"
        return Verdict(True, why, pages, 0, dead_lettered=dead)

    def _pages_waiting(self, snapshot: dict[str, Any] | None) -> str | None:
        """What the fetching side still waits for, or None when it is complete."""
        if snapshot is None:
            return "no progress published yet: is the frontier running (`dualplane run frontier`)?"
        if not snapshot.get("idle"):
            unreachable = int(snapshot.get("robots_retrying", 0))
            if unreachable and not remaining(snapshot):
                return f"robots.txt unreachable, retrying ({unreachable} discovery message(s) wait for it)"
            return f"{remaining(snapshot)} task(s) queued, in flight, retrying or in the backlog"
        seeded, needed = int(snapshot.get("seeded", 0)), 1 if self.seeds is None else self.seeds
        if finished_count(snapshot) > 0 or seeded >= needed:
            return None
        return (
            f"{seeded} of {needed} seed(s) reached the frontier" if self.seeds else "no seed reached it yet"
        )


def _counted(pages: int, failed: int, dead: int, outcomes: JobOutcomes) -> Verdict:
    """The verdict on a finished job whose records and dead letters were counted."""
    records, extraction = outcomes.records, outcomes.extraction_dead_letters
    owed = pages if outcomes.with_body is None else outcomes.with_body  # pages with a body to extract
    without = max(0, owed - records)  # fetched pages (with a body) that have no record
    head = f"{pages} page(s) fetched, {records} record(s) committed, {failed} failed"
    if without == 0 and dead == 0 and extraction == 0:
        why = f"{head}, 0 dead-lettered; every fetched page has its record"
        if owed < pages:  # redirects handed to the frontier, and 304s, carry no page to extract
            why += f" ({pages - owed} without a body: redirects or unchanged pages)"
        return Verdict(True, why, pages, 0, records=records)
    total = dead + extraction
    parts = [f"{total} page(s) dead-lettered ({dead} at fetch, {extraction} at extraction)"]
    if without:
        parts.append(f"{without} fetched page(s) without a record")
    reasons = outcomes.top_reasons()
    why = f"{head}; {', '.join(parts)}" + (f": {reasons}" if reasons else "")
    return Verdict(True, why, pages, 0, complete=False, records=records, dead_lettered=total)


def _turned_away(snapshot: dict[str, Any]) -> str:
    """Why a job ran no task: how many of its URLs the frontier turned away, and for what."""
    parts = [f"{int(snapshot.get(key, 0))} {words}" for key, words in REJECTIONS.items() if snapshot.get(key)]
    return f"the frontier turned every seed away ({', '.join(parts)})" if parts else "no seed was admitted"


def _moved(snapshot: dict[str, Any] | None, last: dict[str, Any] | None) -> bool:
    """Whether the counters moved (the times a shard stamps on each publication do not count)."""
    if snapshot is None or last is None:
        return snapshot is not last
    keys = (snapshot.keys() | last.keys()) - {"published_at", "updated_at", "rate_per_s"}
    return any(snapshot.get(key) != last.get(key) for key in keys)


def _held(snapshot: dict[str, Any] | None) -> Verdict | None:
    """The verdict on a job cancelled or paused by a user (None: neither), whatever its counters say."""
    if snapshot is None:
        return None
    pages = int(snapshot.get("done", 0))
    if snapshot.get("cancelled_at"):
        return Verdict(False, f"cancelled after {pages} page(s) fetched", pages, cancelled=True)
    if snapshot.get("paused_at"):
        why = f"paused after {pages} page(s) fetched; `dualplane job resume` lets it go on"
        return Verdict(False, why, pages, paused=True)
    return None
