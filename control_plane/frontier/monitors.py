"""Monitors on one frontier shard: jobs that come back, URL by URL, when their revisit is due.

A monitor's first visit is an ordinary crawl job (``<monitor>-v1``); each URL it admits joins the
schedule (:mod:`.schedule`) at once, leased until its task reports, so none is lost whatever becomes of its
task. When a URL's task ends, its report (with the validators and fingerprint the fetcher kept)
judges the visit, sets the URL's next interval and next due time, all in the pass that handles the
report: the row goes to the changelog with it, before the report's ack. While its task is out, the
row is leased (``LEASE_S``) so that nothing is revisited twice.

Due URLs become crawl tasks of the monitor's current visit job (``<monitor>-v<n>``, in the monitor's
priority lane, carrying the last validators) through the frontier's own admission (``service``:
per-domain caps, P_d, pauses, the shard's backpressure, robots.txt). A visit job closes when it
has nothing outstanding; the next due URLs open the next visit. A URL whose sitemap ``lastmod`` is
not newer than its last visit is skipped once (rescheduled as unchanged, without a fetch). Every
row taken is leased ahead as it is issued, so nothing is revisited twice in one interval.

Each shard publishes a snapshot per monitor (URLs scheduled, due, overdue, the oldest overdue age,
change and 304 counters) to the job progress topic, keyed ``monitor:<id>``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dualplane import schemas
from dualplane.brokers.amqp.messages import (
    CrawlTask,
    MonitorCommand,
    MonitorSpec,
    TaskReport,
    Validators,
    new_id,
    visit_job_id,
)
from dualplane.control_plane.frontier.jobs import SideRecord
from dualplane.control_plane.frontier.progress import SNAPSHOT_KEY_PREFIX
from dualplane.control_plane.frontier.schedule import (
    LEFT,
    MONITOR_COUNTERS,
    ScheduledUrl,
    judge,
    next_interval_s,
)
from dualplane.control_plane.frontier.schedule_events import ScheduleEvents
from dualplane.control_plane.frontier.store import FrontierState

# A due URL not taken within this long (no room in its domain or the shard, its monitor's budget
# spent, its robots.txt awaited) is overdue: status shows how many, and the oldest's age.
OVERDUE_AFTER_S = 60
# While a URL's task is out (queued, fetching, retrying), its row is leased this far ahead: its report
# (every task ends in one: done, failed or dead-lettered) sets the real next visit. Only a task lost
# between the changelog and the lanes (the frontier died between the two commits of a pass) leaves
# its URL waiting for the lease, a visit late, never dropped.
LEASE_S = 6 * 3600
DUE_SCAN = 1000  # due rows looked at per pass: bounds a pass's time however many are due
GONE_AFTER = 2  # DUALPLANE_FRONTIER_MONITOR_GONE_AFTER's default (visits in a row answering 404 or 410)
NOT_FOUND, REDIRECT = "not_found", "redirect"  # the fetcher's outcomes (control_plane.fetcher.retry_policy)
CHANGES_TOPIC = "records.changes"  # where events go when the shard names no topic (tests)
OPEN_STATES = ("queued", "in_flight", "retrying")

Admit = Callable[[CrawlTask], bool | None]
"""Issue a due URL's task now (True), leave it due for a later pass (False), or not at all (None:
robots.txt disallows it now)."""


@dataclass
class _Visit:
    """A monitor's current visit during one pass over the due URLs."""

    job_id: str
    opened_at: int
    pending: int  # URLs due when it opened, not made tasks yet
    room: int | None  # pages its budget has left (None: no budget)
    pending_before: int  # as stored: written back only if the pass changed it


@dataclass(frozen=True)
class Taken:
    """What one pass over due URLs did."""

    issued: int = 0
    skipped: int = 0
    dropped: int = 0
    jobs: frozenset[str] = frozenset()


class Monitors:
    """The shard's monitors and their schedule, over its :class:`FrontierState`."""

    def __init__(
        self,
        state: FrontierState,
        topic: str,
        shard: int,
        clock: Callable[[], float] = time.time,
        *,
        events: ScheduleEvents | None = None,
        gone_after: int = GONE_AFTER,
    ) -> None:
        self.state = state
        self.topic = topic
        self.shard = shard
        self.clock = clock
        self.events = events or ScheduleEvents(CHANGES_TOPIC, _encode_change, clock)
        self.gone_after = gone_after
        self._specs: dict[str, MonitorSpec | None] = {}
        self._job_monitors: dict[str, str | None] = {}
        self._deleted: set[str] = set()  # monitors whose removal is still to publish

    def forget(self) -> None:
        """The store was rolled back or restored: read everything anew."""
        self._specs.clear()
        self._job_monitors.clear()

    # monitors

    def save(self, spec: MonitorSpec) -> None:
        """Create the monitor (or update its rules; its counters and schedule stay)."""
        self.state.db.execute(
            "INSERT INTO monitors (monitor_id, spec, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT (monitor_id) DO UPDATE SET spec = excluded.spec",
            (spec.monitor_id, spec.model_dump_json(), self.clock()),
        )
        self.state.written("monitors", spec.monitor_id, None)
        self._specs[spec.monitor_id] = spec
        self._deleted.discard(spec.monitor_id)

    def spec(self, monitor_id: str) -> MonitorSpec | None:
        if monitor_id not in self._specs:
            row = self.state.db.execute(
                "SELECT spec FROM monitors WHERE monitor_id = ?", (monitor_id,)
            ).fetchone()
            self._specs[monitor_id] = MonitorSpec.model_validate_json(row[0]) if row else None
        return self._specs[monitor_id]

    def command(self, command: MonitorCommand) -> str | None:
        """Apply ``command``; the visit job it opened, if any. Unknown monitors: nothing to do."""
        monitor_id = command.monitor_id
        if self.spec(monitor_id) is None:
            return None
        if command.action in ("pause", "resume"):
            self._set(monitor_id, paused=int(command.action == "pause"))
        elif command.action == "delete":
            self.state.schedule.delete_monitor(monitor_id)
            self.state.db.execute("DELETE FROM monitors WHERE monitor_id = ?", (monitor_id,))
            self.state.written("monitors", monitor_id, None)
            self._specs[monitor_id] = None
            self._deleted.add(monitor_id)
        elif command.action == "visit":
            self.state.schedule.make_due(monitor_id, int(self.clock()))
            return self.open_visit(monitor_id, command.visit)
        return None

    def job_visit(self, monitor_id: str, visit: int) -> None:
        """A visit job of the monitor arrived (the first visit's, or a visit asked for by a client)."""
        if visit > self._visit(monitor_id):
            self._set(monitor_id, visit=visit)

    def monitor_of_job(self, job_id: str) -> str | None:
        """The monitor whose visit ``job_id`` is, or None for an ordinary job."""
        if job_id not in self._job_monitors:
            job = self.state.job(job_id)
            self._job_monitors[job_id] = job.monitor if job is not None else None
        return self._job_monitors[job_id]

    def open_visit(self, monitor_id: str, visit: int | None = None) -> str:
        """Visit ``visit`` (else the next one) of the monitor, made its current visit job."""
        spec = self.spec(monitor_id)
        assert spec is not None
        current = self._visit(monitor_id)
        number = current + 1 if visit is None else visit  # a client's number: its JobSpec may be here already
        job_id = visit_job_id(monitor_id, number)
        if self.state.job(job_id) is None:
            self.state.save_job(spec.job.model_copy(update={"job_id": job_id}))
        # The URLs due now belong to this visit (up to its budget): it stays open until each is taken.
        now = int(self.clock())
        pending = self.state.schedule.count_due(monitor_id, now)
        if spec.job.max_pages is not None:
            pending = min(pending, spec.job.max_pages)
        self._set(monitor_id, visit=max(current, number), visit_at=now, visit_pending=pending)
        self._job_monitors[job_id] = monitor_id
        return job_id

    # the schedule

    def scheduled(self, monitor_id: str, task: CrawlTask, lastmod_ms: int | None) -> None:
        """A URL admitted for the monitor joins its schedule, leased until its task reports (the report
        sets the real next visit)."""
        spec = self.spec(monitor_id)
        if spec is None:
            return
        now = int(self.clock())
        lastmod_s = lastmod_ms // 1000 if lastmod_ms is not None else None
        due_at = now + max(spec.interval_s, LEASE_S)
        row = ScheduledUrl.new(monitor_id, task.url, due_at, spec.interval_s, lastmod_s, depth=task.depth)
        self.state.schedule.put(row)
        self._count(monitor_id, scheduled=1)
        if task.job_id != visit_job_id(monitor_id, 1):  # found on a later visit: a new page of the site
            self.events.add("new", task.job_id, task.url)

    def lastmod(self, monitor_id: str, url: str, lastmod_ms: int) -> None:
        """A sitemap read again gave a scheduled URL's ``lastmod``."""
        row = self.state.schedule.get(monitor_id, url)
        if row is not None and row.lastmod_s != lastmod_ms // 1000:
            row.lastmod_s = lastmod_ms // 1000
            self.state.schedule.put(row)

    def reported(self, report: TaskReport) -> None:
        """A task of a monitor's visit ended (once per task): judge the visit, reschedule the URL."""
        monitor_id = self.monitor_of_job(report.job_id)
        spec = self.spec(monitor_id) if monitor_id is not None else None
        if monitor_id is None or spec is None:
            return
        now = int(self.clock())
        row = self.state.schedule.get(monitor_id, report.url)
        if row is None:  # issued before its monitor's schedule held it (or the row was deleted): adopt it
            row = ScheduledUrl.new(monitor_id, report.url, now, spec.interval_s)  # depth unknown: a seed's
            self._count(monitor_id, scheduled=1)
        if row.due_at == LEFT or self._leaves(monitor_id, row, report):
            return  # off the schedule (a task of it still out when it left), or leaving now
        outcome = report.outcome if report.stage == "done" else "failed"
        verdict = judge(outcome, report.fingerprint, row)
        row.interval_s = next_interval_s(row.interval_s, verdict, min_s=spec.min_interval_s,
                                         max_s=spec.max_interval_s)  # fmt: skip
        row.due_at = now + row.interval_s
        if verdict != "failed":
            row.visits += 1
            row.visited_at = now
            _keep_validators(row, report)
        if verdict == "changed":
            row.changes += 1
            self._count(monitor_id, changed=1)
        elif verdict == "unchanged" and outcome == "not_modified":
            row.not_modified += 1
            self._count(monitor_id, not_modified=1)
        elif verdict == "unchanged":
            self._count(monitor_id, unchanged=1)
        elif verdict == "failed":
            self._count(monitor_id, failed=1)
        self.state.schedule.put(row)

    def _leaves(self, monitor_id: str, row: ScheduledUrl, report: TaskReport) -> bool:
        """Whether this visit takes the URL off the schedule: gone (404/410) on ``gone_after`` visits in a
        row (a ``gone`` event), or a redirect, whose target was discovered and is scheduled in its place."""
        if report.outcome == NOT_FOUND:
            row.missing += 1
            if row.missing < self.gone_after:
                return False
            self.state.schedule.leave(row)
            self._count(monitor_id, scheduled=-1, gone=1)
            self.events.add("gone", report.job_id, report.url, row.visited_at)
            return True
        if report.stage == "done":
            row.missing = 0
        if report.stage == "done" and report.outcome == REDIRECT:
            self.state.schedule.leave(row)
            self._count(monitor_id, scheduled=-1)
            return True
        return False

    def take_due(self, admit: Admit, limit: int = DUE_SCAN) -> Taken:
        """Turn due URLs into tasks of their monitor's current visit, through ``admit`` (at most
        ``limit`` rows looked at: those left due, for want of room, are looked at again next pass)."""
        now = int(self.clock())
        paused = frozenset(self._paused())
        jobs: dict[str, _Visit] = {}
        issued = skipped = dropped = 0
        for row in self.state.schedule.due(now, limit, paused):
            spec = self.spec(row.monitor_id)
            if spec is None:
                continue
            visit = jobs.get(row.monitor_id) or jobs.setdefault(
                row.monitor_id, self._visit_job(row.monitor_id, spec)
            )
            # A URL due when the visit opened counts in it (pending); later ones join while room is left.
            counted = row.due_at <= visit.opened_at and visit.pending > 0
            if not counted and visit.room is not None and visit.room <= 0:
                continue  # the visit's budget is spent: due again in the next visit
            if row.lastmod_s is not None and row.visited_at is not None and row.lastmod_s <= row.visited_at:
                self._skip(row, spec, now)
                skipped += 1
            else:
                admitted = admit(_task(spec, visit.job_id, row))
                if admitted is False:
                    continue  # its domain (or the shard) has no room now: still due, taken in a later pass
                row.due_at = now + max(row.interval_s, LEASE_S)  # not taken again before its report moves it
                self.state.schedule.put(row)
                if admitted is None:
                    dropped += 1
                else:
                    self.state.count(visit.job_id, seeded=1, discovered=1)
                    issued += 1
                    visit.room = None if visit.room is None else visit.room - 1
            if counted:
                visit.pending -= 1
        for monitor_id, visit in jobs.items():
            if visit.pending != visit.pending_before:
                self._set(monitor_id, visit_pending=max(visit.pending, 0))
        return Taken(issued, skipped, dropped, frozenset(visit.job_id for visit in jobs.values()))

    def pending_visits(self) -> dict[str, int]:
        """Each visit job with due URLs not yet made tasks, and how many (see JobSnapshots.due_waiting)."""
        query = "SELECT monitor_id, visit, visit_pending FROM monitors WHERE visit_pending > 0"
        return {visit_job_id(row[0], row[1]): int(row[2]) for row in self.state.db.execute(query)}

    def _skip(self, row: ScheduledUrl, spec: MonitorSpec, now: int) -> None:
        """The site's sitemap says the page did not change since the last visit: no fetch. The lastmod
        is trusted once: unless a sitemap read again confirms it, the next due visit fetches."""
        row.interval_s = next_interval_s(row.interval_s, "unchanged", min_s=spec.min_interval_s,
                                         max_s=spec.max_interval_s)  # fmt: skip
        row.due_at = now + row.interval_s
        row.lastmod_s = None
        row.skipped += 1
        self.state.schedule.put(row)
        self._count(row.monitor_id, skipped=1)

    def _visit_job(self, monitor_id: str, spec: MonitorSpec) -> _Visit:
        """The visit due URLs join now: its job, when it opened, its URLs still to take, its budget left."""
        job_id = visit_job_id(monitor_id, self._visit(monitor_id))
        if self.state.job(job_id) is None or not self._open(job_id, monitor_id):
            job_id = self.open_visit(monitor_id)
        opened_at, pending = self.state.db.execute(
            "SELECT visit_at, visit_pending FROM monitors WHERE monitor_id = ?", (monitor_id,)
        ).fetchone()
        budget = spec.job.max_pages
        room = None if budget is None else budget - self.state.pages_admitted(job_id)
        return _Visit(job_id, int(opened_at), int(pending), room, int(pending))

    def _open(self, job_id: str, monitor_id: str) -> bool:
        """A visit is open until it took some URLs, has none outstanding and none of its due URLs left."""
        if self.state.db.execute(
            "SELECT visit_pending FROM monitors WHERE monitor_id = ?", (monitor_id,)
        ).fetchone()[0]:
            return True
        seeded, backlog = self.state.db.execute(
            "SELECT seeded, backlog FROM jobs WHERE job_id = ?", (job_id,)
        ).fetchone()
        marks = ", ".join("?" for _ in OPEN_STATES)
        outstanding = self.state.db.execute(
            f"SELECT COUNT(*) FROM tasks WHERE job_id = ? AND state IN ({marks})", (job_id, *OPEN_STATES)
        ).fetchone()[0]
        return bool(seeded == 0 or backlog or outstanding)

    # snapshots

    def snapshots(self) -> list[SideRecord]:
        """Every monitor's snapshot on this shard, for the progress topic (with a changelog write)."""
        now = self.clock()
        due = self.state.schedule.due_counts(int(now), OVERDUE_AFTER_S)
        records = []
        for row in self.state.db.execute(
            f"SELECT monitor_id, spec, paused, visit, {', '.join(MONITOR_COUNTERS)} FROM monitors"
        ):
            monitor_id, spec = row[0], MonitorSpec.model_validate_json(row[1])
            counters = dict(zip(MONITOR_COUNTERS, row[4:], strict=True))
            due_now, overdue, oldest = due.get(monitor_id, (0, 0, None))
            snapshot = {
                "kind": "monitor", "monitor_id": monitor_id, "shard": self.shard, "paused": bool(row[2]),
                "visit": row[3], "job_id": visit_job_id(monitor_id, row[3]), **counters,
                "due_now": due_now, "overdue": overdue, "oldest_due_at": oldest, "published_at": now,
                "spec": json.loads(spec.model_dump_json()),
            }  # fmt: skip
            records.append((self.topic, SNAPSHOT_KEY_PREFIX + monitor_id, json.dumps(snapshot).encode()))
        for monitor_id in sorted(self._deleted):
            gone = {"kind": "monitor", "monitor_id": monitor_id, "shard": self.shard, "deleted": True}
            records.append((self.topic, SNAPSHOT_KEY_PREFIX + monitor_id, json.dumps(gone).encode()))
        self._deleted.clear()
        return records

    # rows of the monitors table

    def _visit(self, monitor_id: str) -> int:
        row = self.state.db.execute(
            "SELECT visit FROM monitors WHERE monitor_id = ?", (monitor_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _paused(self) -> list[str]:
        return [row[0] for row in self.state.db.execute("SELECT monitor_id FROM monitors WHERE paused = 1")]

    def _set(self, monitor_id: str, **values: int) -> None:
        assignments = ", ".join(f"{name} = ?" for name in values)  # names from this module, never input
        self.state.db.execute(
            f"UPDATE monitors SET {assignments} WHERE monitor_id = ?", (*values.values(), monitor_id)
        )
        self.state.written("monitors", monitor_id, None)

    def _count(self, monitor_id: str, **deltas: int) -> None:
        assignments = ", ".join(f"{name} = {name} + ?" for name in deltas)  # names from MONITOR_COUNTERS
        self.state.db.execute(
            f"UPDATE monitors SET {assignments} WHERE monitor_id = ?", (*deltas.values(), monitor_id)
        )
        self.state.written("monitors", monitor_id, None)


def _encode_change(record: Mapping[str, Any]) -> bytes:
    return schemas.encode("change_event", record)


def _task(spec: MonitorSpec, job_id: str, row: ScheduledUrl) -> CrawlTask:
    validators = None
    if row.etag is not None or row.last_modified is not None:
        validators = Validators(etag=row.etag, last_modified=row.last_modified)
    return CrawlTask(
        job_id=job_id, trace_id=new_id(), url=row.url, domain=row.domain, depth=row.depth,
        priority=spec.job.priority, extractor=spec.job.extractor, validators=validators,
        profile=spec.job.profile,
    )  # fmt: skip


def _keep_validators(row: ScheduledUrl, report: TaskReport) -> None:
    """What the visit's response said: its validators (a 304 may repeat or renew them) and, for a page
    fetched whole, its fingerprint. A 200 without validators means the page no longer has any."""
    if report.etag is not None or report.last_modified is not None:
        row.etag, row.last_modified = report.etag, report.last_modified
    elif report.outcome == "ok":
        row.etag = row.last_modified = None
    if report.outcome == "ok":
        row.fingerprint = report.fingerprint
