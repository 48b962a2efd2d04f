"""A shard's revisit schedule: the adaptive interval rule, and the ``monitors`` and ``schedule`` tables.

Both tables live in the shard's SQLite store (:mod:`.store`) and every row written goes to the
shard's changelog with the pass that wrote it, like any other row, so a standby restores them on
failover. A ``schedule`` row is one URL of one monitor: when it is next due, its current interval,
what the last visit kept (validators, text fingerprint, the sitemap's lastmod) and its counters. Rows
are kept compact: a row's id is a 64-bit hash of its monitor and URL (the rowid itself, so the URL is
stored once and the due-time index holds 8-byte ids, not URLs), and the domain is read from the URL
when a task is made. A million rows per shard is the design point (``benchmarks/monitor_schedule.py``).

The rule (:func:`next_interval_s`): a page seen unchanged (304, the same fingerprint, or skipped
for its sitemap lastmod) is revisited ``GROWTH`` times later, one seen changed twice as soon, always
within the monitor's ``[min, max]``; a failed visit keeps its interval.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from dualplane.core.web.urls import domain_of

Verdict = Literal["changed", "unchanged", "first", "failed"]
GROWTH = 1.5
SHRINK = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS monitors (
    monitor_id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    visit INTEGER NOT NULL DEFAULT 1,
    visit_at INTEGER NOT NULL DEFAULT 0,
    visit_pending INTEGER NOT NULL DEFAULT 0,
    scheduled INTEGER NOT NULL DEFAULT 0,
    changed INTEGER NOT NULL DEFAULT 0,
    unchanged INTEGER NOT NULL DEFAULT 0,
    not_modified INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    gone INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS schedule (
    id INTEGER PRIMARY KEY,
    monitor_id TEXT NOT NULL,
    url TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    interval_s INTEGER NOT NULL,
    etag TEXT,
    last_modified TEXT,
    fingerprint TEXT,
    lastmod_s INTEGER,
    visited_at INTEGER,
    visits INTEGER NOT NULL DEFAULT 0,
    changes INTEGER NOT NULL DEFAULT 0,
    not_modified INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    depth INTEGER NOT NULL DEFAULT 0,
    missing INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS schedule_by_due ON schedule (due_at);
"""

DUE_PAGE = 500  # due rows read at a time
LEFT = 2**62  # the due time of a URL that left its schedule: never due, not even for `monitor visit`

MONITOR_COUNTERS = ("scheduled", "changed", "unchanged", "not_modified", "skipped", "failed", "gone")


def next_interval_s(current_s: int, verdict: Verdict, *, min_s: int, max_s: int) -> int:
    """The interval after a visit judged ``verdict``: longer when unchanged, shorter when changed."""
    if verdict == "unchanged":
        wanted = math.ceil(current_s * GROWTH)
    elif verdict == "changed":
        wanted = current_s // SHRINK
    else:
        wanted = current_s
    return int(min(max(wanted, min_s), max_s))


def judge(outcome: str, fingerprint: str | None, previous: ScheduledUrl) -> Verdict:
    """Whether a done visit found the page changed: a 304 says unchanged; a page fetched whole is
    unchanged only if it has a fingerprint (no validators) equal to the last one."""
    if outcome == "not_modified":
        return "unchanged"
    if outcome != "ok":
        return "failed"
    if previous.visits == 0:
        return "first"
    if fingerprint is not None and fingerprint == previous.fingerprint:
        return "unchanged"
    return "changed"


def schedule_id(monitor_id: str, url: str) -> int:
    """The row id of ``url`` in ``monitor_id``'s schedule: 64 bits of BLAKE2b, so a million URLs collide
    with a chance of about 3e-8 (a collision is read as absent, see :meth:`ScheduleTable.get`)."""
    digest = hashlib.blake2b(f"{monitor_id} {url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@dataclass(slots=True)
class ScheduledUrl:
    """One row of the ``schedule`` table."""

    id: int
    monitor_id: str
    url: str
    due_at: int
    interval_s: int
    etag: str | None = None
    last_modified: str | None = None
    fingerprint: str | None = None
    lastmod_s: int | None = None
    visited_at: int | None = None
    visits: int = 0
    changes: int = 0
    not_modified: int = 0
    skipped: int = 0
    # Links followed from the monitor's seeds to this URL on the visit that found it: its revisits are
    # tasks at this depth, so their links are scoped as on the first visit (max_depth counts from the
    # seeds, never from a revisited page).
    depth: int = 0
    missing: int = (
        0  # visits in a row that found it gone (404, 410): at DUALPLANE_FRONTIER_MONITOR_GONE_AFTER it leaves
    )

    @classmethod
    def new(
        cls,
        monitor_id: str,
        url: str,
        due_at: int,
        interval_s: int,
        lastmod_s: int | None = None,
        *,
        depth: int = 0,
    ) -> ScheduledUrl:
        row_id = schedule_id(monitor_id, url)
        return cls(row_id, monitor_id, url, due_at, interval_s, lastmod_s=lastmod_s, depth=depth)

    @property
    def domain(self) -> str:
        return domain_of(self.url)


OnWrite = Callable[[str, str, dict[str, Any] | None], None]
"""Told of each row written: (table, key, its new content, or None when unknown or deleted)."""

COLUMNS = tuple(ScheduledUrl.__dataclass_fields__)
_UPSERT = f"INSERT OR REPLACE INTO schedule ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"


class ScheduleTable:
    """Reads and writes ``schedule`` rows on the store's connection; each write is reported to
    ``on_write`` (table, key, row or None), which the store turns into a changelog row."""

    def __init__(self, db: sqlite3.Connection, on_write: OnWrite) -> None:
        self.db = db
        self.on_write = on_write

    def get(self, monitor_id: str, url: str) -> ScheduledUrl | None:
        row = self.db.execute(f"SELECT {', '.join(COLUMNS)} FROM schedule WHERE id = ?",
                              (schedule_id(monitor_id, url),)).fetchone()  # fmt: skip
        found = None if row is None else ScheduledUrl(*row)
        return found if found is not None and (found.monitor_id, found.url) == (monitor_id, url) else None

    def has(self, monitor_id: str, url: str) -> bool:
        return self.get(monitor_id, url) is not None

    def put(self, row: ScheduledUrl) -> None:
        values = asdict(row)
        self.db.execute(_UPSERT, tuple(values.values()))
        self.on_write("schedule", str(row.id), values)

    def leave(self, row: ScheduledUrl) -> None:
        """Take a URL off its monitor's schedule for good (gone, or replaced by its redirect's target).

        The row stays, never due (:data:`LEFT`): the site's pages still link to it, and a row the
        admission finds is a duplicate, so the next visit does not fetch it as a new page.
        """
        row.due_at = LEFT
        self.put(row)

    def due(
        self, now_s: int, limit: int, skip_monitors: frozenset[str] = frozenset()
    ) -> Iterator[ScheduledUrl]:
        """Rows due at ``now_s`` of monitors not in ``skip_monitors``, oldest due first, at most ``limit``.

        Read a page at a time by (due_at, id), so the caller may write the rows it was given (a row
        taken moves ahead and is not met again) and a paused monitor's rows never fill the window.
        """
        skip = sorted(skip_monitors)
        unless = f" AND monitor_id NOT IN ({', '.join('?' for _ in skip)})" if skip else ""
        query = (
            f"SELECT {', '.join(COLUMNS)} FROM schedule WHERE due_at <= ? AND (due_at, id) > (?, ?)"
            f"{unless} ORDER BY due_at, id LIMIT ?"
        )
        after: tuple[int, int] = (-(2**63), -(2**63))
        while limit > 0:
            rows = self.db.execute(query, (now_s, *after, *skip, min(limit, DUE_PAGE))).fetchall()
            for row in rows:
                yield ScheduledUrl(*row)
            if len(rows) < DUE_PAGE:
                return
            limit -= len(rows)
            after = (rows[-1][3], rows[-1][0])

    def make_due(self, monitor_id: str, now_s: int) -> int:
        """Every row of the monitor due at ``now_s`` (a visit asked for now); how many."""
        ids = [row[0] for row in self.db.execute(
            "SELECT id FROM schedule WHERE monitor_id = ? AND due_at > ? AND due_at < ?",
            (monitor_id, now_s, LEFT))]  # fmt: skip
        for row_id in ids:
            self.db.execute("UPDATE schedule SET due_at = ? WHERE id = ?", (now_s, row_id))
            self.on_write("schedule", str(row_id), None)
        return len(ids)

    def delete_monitor(self, monitor_id: str) -> int:
        """Drop the monitor's whole schedule; how many rows."""
        query = "SELECT id FROM schedule WHERE monitor_id = ?"
        ids = [row[0] for row in self.db.execute(query, (monitor_id,))]
        for row_id in ids:
            self.db.execute("DELETE FROM schedule WHERE id = ?", (row_id,))
            self.on_write("schedule", str(row_id), None)
        return len(ids)

    def count_due(self, monitor_id: str, now_s: int) -> int:
        """How many of the monitor's URLs are due at ``now_s``."""
        query = "SELECT COUNT(*) FROM schedule WHERE due_at <= ? AND monitor_id = ?"
        return int(self.db.execute(query, (now_s, monitor_id)).fetchone()[0])

    def due_counts(self, now_s: int, overdue_s: int) -> dict[str, tuple[int, int, int | None]]:
        """Per monitor: (URLs due now, URLs overdue by more than ``overdue_s``, the oldest due_at)."""
        query = (
            "SELECT monitor_id, COUNT(*), SUM(due_at <= ?), MIN(due_at) FROM schedule "
            "WHERE due_at <= ? GROUP BY monitor_id"
        )
        return {row[0]: (int(row[1]), int(row[2] or 0), row[3])
                for row in self.db.execute(query, (now_s - overdue_s, now_s))}  # fmt: skip
