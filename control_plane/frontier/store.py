"""A frontier shard's state in SQLite: jobs and their counters, domains, tasks, the backlog.

One writer (the shard's active frontier) changes it while handling a pass of messages and
commits once per pass, before the pass's acks (see ``service``). Every row a pass changes is
remembered (:meth:`FrontierState.changes`), so the same rows can be written to the shard's
changelog in Kafka first: another machine rebuilds the state from there (:meth:`apply`).

The ``messages`` table makes redelivery harmless: each handled message's id is kept with the
tasks it published until its ack is committed, so a message delivered again after a crash
publishes exactly those tasks again instead of being handled twice.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.amqp.permits import PermitLedger
from dualplane.control_plane.frontier import schedule, site_rules

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    seeded INTEGER NOT NULL DEFAULT 0,
    discovered INTEGER NOT NULL DEFAULT 0,
    duplicates INTEGER NOT NULL DEFAULT 0,
    out_of_scope INTEGER NOT NULL DEFAULT 0,
    disallowed INTEGER NOT NULL DEFAULT 0,
    over_limit INTEGER NOT NULL DEFAULT 0,
    invalid INTEGER NOT NULL DEFAULT 0,
    links_over_limit INTEGER NOT NULL DEFAULT 0,
    backlog INTEGER NOT NULL DEFAULT 0,
    cancelled_at REAL NOT NULL DEFAULT 0,
    paused_at REAL NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS domains (
    domain TEXT PRIMARY KEY,
    outstanding INTEGER NOT NULL DEFAULT 0,
    permits INTEGER NOT NULL DEFAULT 0,
    permits_declared_at REAL,
    last_active_at REAL,
    permit_debt INTEGER NOT NULL DEFAULT 0,
    retrying INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS backlog (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    domain TEXT NOT NULL,
    job_id TEXT NOT NULL,
    task TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS backlog_by_domain ON backlog (domain, id);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    domain TEXT NOT NULL,
    state TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tasks_by_job ON tasks (job_id, state);
CREATE TABLE IF NOT EXISTS messages (
    message_id TEXT PRIMARY KEY,
    tasks TEXT NOT NULL,
    handled_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""

# The tables a changelog row may name, with their primary key (never input: checked on restore).
TABLE_KEYS = {
    "jobs": "job_id",
    "domains": "domain",
    "backlog": "id",
    "tasks": "task_id",
    "messages": "message_id",
    "monitors": "monitor_id",
    "schedule": "id",
    site_rules.TABLE: "id",
}

# Where a report moves a task. Final states absorb: a repeated or late report changes nothing,
# so counters stay exact however often fetchers crash and tasks are redelivered.
TASK_STATES = ("queued", "in_flight", "retrying", "done", "failed", "dead_lettered", "cancelled")
FINAL_STATES = frozenset({"done", "failed", "dead_lettered", "cancelled"})
STAGE_TO_STATE = {
    "started": "in_flight",
    "retrying": "retrying",
    "done": "done",
    "failed": "failed",
    "dead_lettered": "dead_lettered",
}


@dataclass(frozen=True)
class JobProgress:
    """A job's counters, as ``dualplane status --job`` shows them."""

    job_id: str
    seeded: int
    discovered: int
    duplicates: int
    out_of_scope: int
    disallowed: int
    over_limit: int
    invalid: int
    links_over_limit: int  # links of fetched pages beyond DUALPLANE_FETCH_MAX_LINKS_PER_PAGE, left out
    queued: int
    in_flight: int
    retrying: int
    done: int
    failed: int
    dead_lettered: int
    cancelled: int  # tasks not finished when the job was cancelled
    backlog: int
    cancelled_at: float  # 0: not cancelled
    paused_at: float  # 0: not paused (``dualplane job pause``; resumed sets it back to 0)
    created_at: float
    updated_at: float

    @property
    def outstanding(self) -> int:
        return self.queued + self.in_flight + self.retrying

    @property
    def idle(self) -> bool:
        """Nothing queued, running, waiting to retry or waiting in the backlog."""
        return self.outstanding == 0 and self.backlog == 0

    def as_dict(self) -> dict[str, object]:
        return {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            "outstanding": self.outstanding,
            "idle": self.idle,
        }


# Counted once per discovered URL as it passes the frontier's pipeline (or, links_over_limit, left out
# by the fetcher before it, as reported with the page's task).
FUNNEL = (
    "seeded", "discovered", "duplicates", "out_of_scope", "disallowed", "over_limit", "invalid",
    "links_over_limit", "backlog",
)  # fmt: skip


class FrontierState:
    """Typed access to the shard's database; nothing is durable before :meth:`commit`."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # One thread uses it at a time (built on one, run on the consumer thread, closed after it).
        self.db = sqlite3.connect(path, isolation_level="DEFERRED", check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process crashes
        self.db.executescript(SCHEMA)
        self.db.executescript(schedule.SCHEMA)
        self.db.executescript(site_rules.SCHEMA)
        self._migrate()
        self.db.commit()
        self.dirty: set[tuple[str, str]] = set()  # (table, key) changed since the last commit
        # Rows of ``dirty`` whose content is known from the write itself (a new task's, a task's new
        # state): ``changes`` takes them from here instead of reading each back (a SELECT per task was
        # a tenth of the frontier's time at 10,000 URLs/s).
        self._rows: dict[tuple[str, str], dict[str, Any]] = {}
        # (outstanding, permits, permits_declared_at) per domain, as read or written since the cache
        # was last dropped; every write to a domain's row goes through here or drops its entry.
        self._domains: dict[str, tuple[int, int, float | None]] = {}
        self._retrying: dict[str, int] = {}  # the same for the domain's tasks waiting out a retry
        self._outstanding = self._scalar("SELECT COALESCE(SUM(outstanding), 0) FROM domains")
        self.schedule = schedule.ScheduleTable(self.db, self.written)

    def written(self, table: str, key: str, row: dict[str, Any] | None) -> None:
        """A row of ``table`` was written (its new content, or None: :meth:`changes` reads it back)."""
        self.dirty.add((table, key))
        if row is None:
            self._rows.pop((table, key), None)
        else:
            self._rows[(table, key)] = row

    def _migrate(self) -> None:
        """Add columns that databases made by older versions lack (CREATE IF NOT EXISTS kept theirs)."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(domains)")}
        if "permit_debt" not in columns:
            self.db.execute("ALTER TABLE domains ADD COLUMN permit_debt INTEGER NOT NULL DEFAULT 0")
        if "retrying" not in columns:
            self.db.execute("ALTER TABLE domains ADD COLUMN retrying INTEGER NOT NULL DEFAULT 0")
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(jobs)")}
        if "links_over_limit" not in columns:
            self.db.execute("ALTER TABLE jobs ADD COLUMN links_over_limit INTEGER NOT NULL DEFAULT 0")
        if "cancelled_at" not in columns:
            self.db.execute("ALTER TABLE jobs ADD COLUMN cancelled_at REAL NOT NULL DEFAULT 0")
        if "paused_at" not in columns:
            self.db.execute("ALTER TABLE jobs ADD COLUMN paused_at REAL NOT NULL DEFAULT 0")
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(schedule)")}
        for added in ("depth", "missing"):
            if added not in columns:  # names from this module, never input
                self.db.execute(f"ALTER TABLE schedule ADD COLUMN {added} INTEGER NOT NULL DEFAULT 0")
        if "gone" not in {row[1] for row in self.db.execute("PRAGMA table_info(monitors)")}:
            self.db.execute("ALTER TABLE monitors ADD COLUMN gone INTEGER NOT NULL DEFAULT 0")

    def commit(self) -> None:
        self.db.commit()
        self.dirty.clear()
        self._rows.clear()

    def rollback(self) -> None:
        """Forget everything since the last commit (the changelog did not take it)."""
        self.db.rollback()
        self.dirty.clear()
        self.restored()

    def close(self) -> None:
        self.db.rollback()
        self.db.close()

    # the changelog

    def changes(self) -> list[tuple[str, dict[str, Any] | None]]:
        """Every row changed since the last commit as ``("table/key", row)``; ``None``: deleted."""
        changed: list[tuple[str, dict[str, Any] | None]] = []
        for table, key in sorted(self.dirty):
            known = self._rows.get((table, key))
            if known is not None:
                changed.append((f"{table}/{key}", known))
                continue
            column = TABLE_KEYS[table]
            cursor = self.db.execute(f"SELECT * FROM {table} WHERE {column} = ?", (key,))
            row = cursor.fetchone()
            names = [description[0] for description in cursor.description]
            changed.append((f"{table}/{key}", dict(zip(names, row, strict=True)) if row else None))
        return changed

    def apply(self, name: str, row: dict[str, Any] | None) -> None:
        """Replay one changelog row (as :meth:`changes` made it) into this database."""
        table, _, key = name.partition("/")
        column = TABLE_KEYS.get(table)
        if column is None:
            raise ValueError(f"changelog row {name!r} names no table of the frontier state")
        if table == "domains":
            self._domains.pop(key, None)
            self._retrying.pop(key, None)
        if row is None:
            self.db.execute(f"DELETE FROM {table} WHERE {column} = ?", (key,))
            return
        names = [name for name in row if name.isidentifier()]
        placeholders = ", ".join("?" for _ in names)
        self.db.execute(
            f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({placeholders})",
            [row[name] for name in names],
        )

    def restored(self) -> None:
        """Call after replaying a changelog or rolling back (to a savepoint too): recompute what is
        cached in memory."""
        self._rows.clear()
        self._domains.clear()
        self._retrying.clear()
        self._outstanding = self._scalar("SELECT COALESCE(SUM(outstanding), 0) FROM domains")

    def meta(self, name: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value))

    # handled messages

    def handled(self, message_id: str) -> list[str] | None:
        """The tasks (JSON) a message published when it was handled; None if it never was."""
        row = self.db.execute("SELECT tasks FROM messages WHERE message_id = ?", (message_id,)).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def mark_handled(self, message_id: str, tasks: list[str]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO messages (message_id, tasks, handled_at) VALUES (?, ?, ?)",
            (message_id, json.dumps(tasks), time.time()),
        )
        self.dirty.add(("messages", message_id))

    def forget_handled(self, message_ids: list[str]) -> None:
        """Their acks are committed: they will not come again."""
        for message_id in message_ids:
            self.db.execute("DELETE FROM messages WHERE message_id = ?", (message_id,))
            self.dirty.add(("messages", message_id))

    def handled_before(self, cutoff: float) -> list[str]:
        """Messages handled before ``cutoff`` whose acks may have been committed without a record."""
        query = "SELECT message_id FROM messages WHERE handled_at < ?"
        return [row[0] for row in self.db.execute(query, (cutoff,))]

    # jobs

    def save_job(self, spec: JobSpec) -> None:
        now = time.time()
        self.db.execute(
            "INSERT INTO jobs (job_id, spec, created_at, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (job_id) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at",
            (spec.job_id, spec.model_dump_json(), now, now),
        )
        self.dirty.add(("jobs", spec.job_id))

    def job(self, job_id: str) -> JobSpec | None:
        row = self.db.execute("SELECT spec FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return JobSpec.model_validate(json.loads(row[0])) if row else None

    def count(self, job_id: str, **deltas: int) -> None:
        """Add ``deltas`` to the job's funnel counters, e.g. ``count(job, duplicates=1)``."""
        unknown = set(deltas) - set(FUNNEL)
        if unknown:
            raise ValueError(f"unknown job counters: {sorted(unknown)}")
        deltas = {name: delta for name, delta in deltas.items() if delta}
        if not deltas:
            return
        assignments = ", ".join(f"{name} = MAX(0, {name} + ?)" for name in deltas)
        self.db.execute(
            # Column names come from the JobProgress dataclass (checked above), never from input.
            f"UPDATE jobs SET {assignments}, updated_at = ? WHERE job_id = ?",
            (*deltas.values(), time.time(), job_id),
        )
        self.dirty.add(("jobs", job_id))

    def cancel_job(self, job_id: str, at: float) -> bool:
        """Cancel the job: its backlog dropped, its unfinished tasks ``cancelled`` (a final state, so
        a late report of one changes nothing) and their domains' slots freed. False: unknown job."""
        if self.db.execute("SELECT 1 FROM jobs WHERE job_id = ?", (job_id,)).fetchone() is None:
            return False
        query = "SELECT id FROM backlog WHERE job_id = ?"
        for (row_id,) in self.db.execute(query, (job_id,)).fetchall():
            self.drop_backlog(row_id)
        unfinished = "SELECT task_id, domain, state FROM tasks WHERE job_id = ? AND state NOT IN (?, ?, ?, ?)"
        for task_id, domain, state in self.db.execute(unfinished, (job_id, *sorted(FINAL_STATES))).fetchall():
            self.db.execute("UPDATE tasks SET state = 'cancelled' WHERE task_id = ?", (task_id,))
            self.dirty.add(("tasks", task_id))
            self._task_row(task_id, job_id, domain, "cancelled")
            self.add_outstanding(domain, -1)
            if state == "retrying":
                self.add_retrying(domain, -1)
        self.db.execute(  # the first cancel's time is kept: a second one changes nothing
            "UPDATE jobs SET backlog = 0, cancelled_at = COALESCE(NULLIF(cancelled_at, 0), ?), "
            "updated_at = ? WHERE job_id = ?",
            (at, time.time(), job_id),
        )
        self.dirty.add(("jobs", job_id))
        return True

    def cancelled(self, job_id: str) -> bool:
        row = self.db.execute("SELECT cancelled_at FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return bool(row and row[0])

    def pause_job(self, job_id: str, paused: bool, at: float) -> bool:
        """Pause the job (none of its tasks issued; its backlog kept) or resume it. The first pause's
        time is kept while it lasts. False: unknown job."""
        if self.db.execute("SELECT 1 FROM jobs WHERE job_id = ?", (job_id,)).fetchone() is None:
            return False
        self.db.execute(
            "UPDATE jobs SET paused_at = CASE WHEN ? THEN COALESCE(NULLIF(paused_at, 0), ?) ELSE 0 END, "
            "updated_at = ? WHERE job_id = ?",
            (paused, at, time.time(), job_id),
        )
        self.dirty.add(("jobs", job_id))
        return True

    def paused(self, job_id: str) -> bool:
        row = self.db.execute("SELECT paused_at FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return bool(row and row[0])

    def progress(self, job_id: str) -> JobProgress | None:
        names = ("job_id", *FUNNEL, "cancelled_at", "paused_at", "created_at", "updated_at")
        row = self.db.execute(f"SELECT {', '.join(names)} FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        if row is None:
            return None
        values: dict[str, Any] = dict(zip(names, row, strict=True))
        values.update(dict.fromkeys(TASK_STATES, 0))
        query = "SELECT state, COUNT(*) FROM tasks WHERE job_id = ? GROUP BY state"
        values.update(dict(self.db.execute(query, (job_id,)).fetchall()))
        return JobProgress(**values)

    def pages_admitted(self, job_id: str) -> int:
        """Tasks ever issued for the job plus those waiting in the backlog (what ``max_pages`` limits)."""
        issued = self.db.execute("SELECT COUNT(*) FROM tasks WHERE job_id = ?", (job_id,)).fetchone()[0]
        backlog = self.db.execute("SELECT backlog FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return int(issued) + (int(backlog[0]) if backlog else 0)

    # tasks

    def task_issued(self, task_id: str, job_id: str, domain: str) -> None:
        """Record a published task as queued and count it against its domain."""
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO tasks (task_id, job_id, domain, state) VALUES (?, ?, ?, 'queued')",
            (task_id, job_id, domain),
        )
        self.dirty.add(("tasks", task_id))
        if cursor.rowcount == 1:  # else the row was there already: changes() reads it
            self._task_row(task_id, job_id, domain, "queued")
        self.add_outstanding(domain, 1)

    def _task_row(self, task_id: str, job_id: str, domain: str, state: str) -> None:
        row = {"task_id": task_id, "job_id": job_id, "domain": domain, "state": state}
        self._rows[("tasks", task_id)] = row

    def task_reported(self, task_id: str, job_id: str, domain: str, stage: str) -> bool:
        """Move the task to the state ``stage`` implies; True when it became final just now.

        Reports for a task already final are ignored, so duplicates after crashes count once.
        """
        new_state = STAGE_TO_STATE[stage]
        query = "SELECT state, job_id, domain FROM tasks WHERE task_id = ?"
        row = self.db.execute(query, (task_id,)).fetchone()
        if row is None:  # issued before this database existed: adopt it
            self.db.execute(
                "INSERT INTO tasks (task_id, job_id, domain, state) VALUES (?, ?, ?, ?)",
                (task_id, job_id, domain, new_state),
            )
            self.dirty.add(("tasks", task_id))
            self._task_row(task_id, job_id, domain, new_state)
            return False
        if row[0] in FINAL_STATES or row[0] == new_state:
            return False
        self.db.execute("UPDATE tasks SET state = ? WHERE task_id = ?", (new_state, task_id))
        self.dirty.add(("tasks", task_id))
        self._task_row(task_id, row[1], row[2], new_state)
        if (new_state == "retrying") != (row[0] == "retrying"):
            self.add_retrying(row[2], 1 if new_state == "retrying" else -1)
        if new_state in FINAL_STATES:
            self.add_outstanding(domain, -1)
            return True
        return False

    def job_ids(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT job_id FROM jobs ORDER BY created_at")]

    # domains

    def domain(self, domain: str) -> tuple[int, int, float | None]:
        """(outstanding, permits, permits_declared_at) of ``domain``."""
        cached = self._domains.get(domain)
        if cached is not None:
            return cached
        row = self.db.execute(
            "SELECT outstanding, permits, permits_declared_at FROM domains WHERE domain = ?", (domain,)
        ).fetchone()
        found = (int(row[0]), int(row[1]), row[2]) if row else (0, 0, None)
        self._domains[domain] = found
        return found

    def add_outstanding(self, domain: str, delta: int) -> None:
        before, permits, declared_at = self.domain(domain)
        self.db.execute(
            "INSERT INTO domains (domain, outstanding, last_active_at) VALUES (?, MAX(0, ?), ?) "
            "ON CONFLICT (domain) DO UPDATE SET outstanding = MAX(0, outstanding + ?), "
            "last_active_at = excluded.last_active_at",
            (domain, delta, time.time(), delta),
        )
        after = max(0, before + delta)
        self._domains[domain] = (after, permits, declared_at)
        self._outstanding += after - before
        self.dirty.add(("domains", domain))

    def retrying(self, domain: str) -> int:
        """How many of ``domain``'s outstanding tasks wait out a retry delay in a tier."""
        cached = self._retrying.get(domain)
        if cached is None:
            row = self.db.execute("SELECT retrying FROM domains WHERE domain = ?", (domain,)).fetchone()
            cached = self._retrying[domain] = int(row[0]) if row else 0
        return cached

    def add_retrying(self, domain: str, delta: int) -> None:
        after = max(0, self.retrying(domain) + delta)
        self.db.execute(
            "INSERT INTO domains (domain, retrying) VALUES (?, ?) "
            "ON CONFLICT (domain) DO UPDATE SET retrying = excluded.retrying",
            (domain, after),
        )
        self._retrying[domain] = after
        self.dirty.add(("domains", domain))

    def set_permits(self, domain: str, permits: int, declared_at: float, debt: int = 0) -> None:
        """Record the permit queue as (re)declared at ``declared_at`` holding ``permits`` + ``debt``."""
        self.db.execute(
            "INSERT INTO domains (domain, permits, permits_declared_at, permit_debt) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (domain) DO UPDATE SET permits = excluded.permits, "
            "permits_declared_at = excluded.permits_declared_at, permit_debt = excluded.permit_debt",
            (domain, permits, declared_at, debt),
        )
        self._domains.pop(domain, None)
        self.dirty.add(("domains", domain))

    def permit_ledger(self, domain: str) -> PermitLedger:
        """P_d of ``domain``'s permit queue and the surplus permits still to destroy (see permits)."""
        row = self.db.execute(
            "SELECT permits, permit_debt FROM domains WHERE domain = ?", (domain,)
        ).fetchone()
        return PermitLedger(int(row[0]), int(row[1])) if row else PermitLedger(0, 0)

    def set_permit_ledger(self, domain: str, ledger: PermitLedger) -> None:
        """Record a resize of an existing permit queue (its declaration time is unchanged)."""
        self.db.execute(
            "UPDATE domains SET permits = ?, permit_debt = ? WHERE domain = ?",
            (ledger.target, ledger.debt, domain),
        )
        self._domains.pop(domain, None)
        self.dirty.add(("domains", domain))

    def domains_in_debt(self) -> list[str]:
        """Domains whose permit queue still holds permits beyond P_d."""
        return [row[0] for row in self.db.execute("SELECT domain FROM domains WHERE permit_debt > 0")]

    def total_outstanding(self) -> int:
        return self._outstanding

    # backlog

    def push_backlog(self, domain: str, job_id: str, task_json: str) -> None:
        cursor = self.db.execute(
            "INSERT INTO backlog (domain, job_id, task) VALUES (?, ?, ?)", (domain, job_id, task_json)
        )
        self.dirty.add(("backlog", str(cursor.lastrowid)))

    def backlog_for(self, domain: str, limit: int) -> Iterator[tuple[int, str]]:
        """The oldest ``limit`` waiting tasks of ``domain`` as (row id, task JSON), paused jobs' left out."""
        yield from self.db.execute(
            "SELECT id, task FROM backlog WHERE domain = ? AND job_id NOT IN "
            "(SELECT job_id FROM jobs WHERE paused_at != 0) ORDER BY id LIMIT ?",
            (domain, limit),
        ).fetchall()

    def drop_backlog(self, row_id: int) -> None:
        self.db.execute("DELETE FROM backlog WHERE id = ?", (row_id,))
        self.dirty.add(("backlog", str(row_id)))

    def backlog_domains(self, job_id: str | None = None) -> list[str]:
        """The domains with tasks in the backlog (of ``job_id``'s, if given)."""
        if job_id is None:
            return [row[0] for row in self.db.execute("SELECT DISTINCT domain FROM backlog")]
        query = "SELECT DISTINCT domain FROM backlog WHERE job_id = ?"
        return [row[0] for row in self.db.execute(query, (job_id,))]

    def _scalar(self, sql: str) -> int:
        return int(self.db.execute(sql).fetchone()[0])
