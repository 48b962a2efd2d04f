"""The frontier's seen set: URL keys kept exactly in SQLite, then in a Bloom filter past a limit."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Literal

from rbloom import Bloom

from dualplane.control_plane.frontier.exceptions import SeenSetCorrupt
from dualplane.core.web.urls import KEY_BYTES

_SCHEMA = """
CREATE TABLE IF NOT EXISTS seen (key BLOB PRIMARY KEY) WITHOUT ROWID;
-- Each journal row is a batch of keys concatenated: one row per key would cost a B-tree insert each.
CREATE TABLE IF NOT EXISTS journal (keys BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""
_SQLITE_CACHE_KIB = 16 * 1024
_JOURNAL_BATCH = 4096


def _hash_key(key: bytes) -> int:
    # Keys are already uniform BLAKE2b digests, so their own bits are the hash: stable across
    # processes (unlike hash()), which is what lets a saved filter be loaded again. rbloom wants
    # a signed 128-bit integer.
    return int.from_bytes(key[:KEY_BYTES], "big", signed=True)


class SeenSet:
    """A persistent set of 16-byte URL keys (:func:`~core.web.urls.url_key`) with bounded memory.

    The first ``exact_limit`` keys live in a SQLite table (``path``), exactly, on disk. Adding
    one more switches to a Bloom filter sized for ``expected_items`` at ``false_positive_rate``,
    seeded with every exact key; from then on membership is probabilistic (a false positive
    makes the frontier skip a URL it never saw, at about that rate; there are no false
    negatives). The filter is saved beside the database as ``<path>.bloom``; keys added since
    the last snapshot are journaled in SQLite and replayed on open, and :meth:`flush` rewrites
    the file (atomically) once ``journal_limit`` keys have accumulated, so a flush is cheap.

    Memory: a Bloom filter needs ``-n * ln(p) / ln(2)**2`` bits, i.e. 14.4 bits per item at
    p = 0.001, so the defaults (50M items, 0.1%) take 50e6 * 14.38 / 8 = 90 MB (86 MiB) whatever
    the number of keys; exact mode costs only SQLite's page cache (capped at 16 MiB). 10M keys
    therefore need about 90 + 16 MB (``benchmarks/seen_set_memory.py`` measures ~110 MB of peak
    RSS growth, 0.55 of the 200 MB budget), and the same filter holds 50M keys before its
    false-positive rate reaches 0.1% (at 10M it is ~1e-9). Reopening an existing filter keeps
    the size it was created with, whatever ``expected_items`` says.

    Crash semantics: nothing is persisted before :meth:`flush`. Keys added since the last flush
    are forgotten after a crash (or :meth:`close` without a flush), which can cause a duplicate
    fetch but never a lost URL, provided the frontier flushes only after the crawl tasks for the
    new keys are confirmed published, and acks its input after the flush. Not thread-safe: use it
    from one thread at a time.
    """

    def __init__(
        self,
        path: Path,
        *,
        exact_limit: int = 1_000_000,
        expected_items: int = 50_000_000,
        false_positive_rate: float = 0.001,
        journal_limit: int = 1_000_000,
    ) -> None:
        if not 0 <= exact_limit <= expected_items or not 0 < false_positive_rate < 1 or journal_limit < 1:
            raise ValueError(
                "SeenSet needs 0 <= exact_limit <= expected_items, 0 < false_positive_rate < 1 and"
                f" journal_limit >= 1; got exact_limit={exact_limit}, expected_items={expected_items},"
                f" false_positive_rate={false_positive_rate}, journal_limit={journal_limit}"
            )
        self.path = path
        self.bloom_path = path.with_name(path.name + ".bloom")
        self.exact_limit = exact_limit
        self.expected_items = expected_items
        self.false_positive_rate = false_positive_rate
        self.journal_limit = journal_limit
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a commit survives a process crash; a power cut may lose the last ones (duplicates only).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(f"PRAGMA cache_size=-{_SQLITE_CACHE_KIB}")
        self._db.executescript(_SCHEMA)
        self._bloom: Bloom | None = None
        self._bloom_saved = False
        self._journaled = 0
        self._pending: list[bytes] = []  # new bloom-mode keys not yet written to the journal
        if self._meta("mode") == "bloom":
            self._open_bloom()
        else:
            self._count = self._scalar("SELECT COUNT(*) FROM seen")

    def __repr__(self) -> str:
        return f"SeenSet({str(self.path)!r}, mode={self.mode!r}, items={self._count})"

    @property
    def mode(self) -> Literal["exact", "bloom"]:
        """``"exact"`` while keys are stored one by one, ``"bloom"`` after the switch."""
        return "exact" if self._bloom is None else "bloom"

    def __len__(self) -> int:
        """Keys added so far; approximate in bloom mode (a false positive is not counted)."""
        return self._count

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, bytes):
            return False
        if self._bloom is not None:
            return key in self._bloom
        return self._db.execute("SELECT 1 FROM seen WHERE key = ?", (key,)).fetchone() is not None

    def add(self, key: bytes) -> bool:
        """Add ``key``; True if it was new (in bloom mode: not even a false positive)."""
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            raise ValueError(f"a seen-set key is {KEY_BYTES} bytes (url_key()), got {key!r}")
        if self._bloom is None and self._count >= self.exact_limit:
            self._switch_to_bloom()
        if self._bloom is None:
            inserted = self._db.execute("INSERT OR IGNORE INTO seen (key) VALUES (?)", (key,)).rowcount
            self._count += inserted
            return inserted == 1
        if key in self._bloom:
            return False
        self._bloom.add(key)
        self._pending.append(key)
        if len(self._pending) >= _JOURNAL_BATCH:
            self._write_journal()
        self._count += 1
        return True

    def add_many(self, keys: Iterable[bytes]) -> list[bool]:
        """Add each key in order; for each, True if it was new (a repeat within ``keys`` is not)."""
        return [self.add(key) for key in keys]

    def flush(self) -> None:
        """Make every key added so far durable: commit SQLite and, when due, rewrite the Bloom file.

        The Bloom file is rewritten (atomically, via a temporary file and ``os.replace``) on the
        first flush after the switch and whenever ``journal_limit`` keys have been journaled.
        """
        if self._bloom is None:
            self._db.commit()
            return
        self._write_journal()
        if not self._bloom_saved or self._journaled >= self.journal_limit:
            # The file first: a crash before the commit below leaves the old, consistent state.
            self._save_bloom()
            self._db.execute("DELETE FROM seen")
            self._db.execute("DELETE FROM journal")
            self._journaled = 0
            self._set_meta("mode", "bloom")
        self._set_meta("count", str(self._count))
        self._db.commit()
        self._bloom_saved = True

    def close(self) -> None:
        """Close the database, discarding keys added since the last :meth:`flush` (as a crash would)."""
        self._pending.clear()
        self._db.rollback()
        self._db.close()

    def __enter__(self) -> SeenSet:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _switch_to_bloom(self) -> None:
        # In memory only: the switch becomes durable at the next flush, like the keys that caused it.
        bloom = Bloom(self.expected_items, self.false_positive_rate, _hash_key)
        bloom.update(key for (key,) in self._db.execute("SELECT key FROM seen"))
        self._bloom = bloom
        self._bloom_saved = False

    def _open_bloom(self) -> None:
        if not self.bloom_path.exists():
            raise SeenSetCorrupt(
                f"{self.path} says the seen set is in bloom mode but {self.bloom_path} is missing;"
                " restore that file, or delete both to start over (seen URLs would be fetched again)"
            )
        self._bloom = Bloom.load(self.bloom_path, _hash_key)
        for (batch,) in self._db.execute("SELECT keys FROM journal"):
            self._bloom.update(batch[i : i + KEY_BYTES] for i in range(0, len(batch), KEY_BYTES))
            self._journaled += len(batch) // KEY_BYTES
        self._bloom_saved = True
        self._count = int(self._meta("count") or 0)

    def _write_journal(self) -> None:
        # Written inside the open transaction: durable only once flush() commits it.
        if self._pending:
            self._db.execute("INSERT INTO journal (keys) VALUES (?)", (b"".join(self._pending),))
            self._journaled += len(self._pending)
            self._pending.clear()

    def _save_bloom(self) -> None:
        assert self._bloom is not None
        temporary = self.bloom_path.with_name(self.bloom_path.name + ".tmp")
        self._bloom.save(temporary)
        with temporary.open("rb") as written:
            os.fsync(written.fileno())
        temporary.replace(self.bloom_path)
        directory = os.open(self.bloom_path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # so the rename itself survives a power cut
        finally:
            os.close(directory)

    def _meta(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value))

    def _scalar(self, sql: str) -> int:
        return int(self._db.execute(sql).fetchone()[0])
