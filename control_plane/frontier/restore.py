"""Bringing a shard's local state up to date from its changelog (on takeover, and while standing by).

The local SQLite and seen set record the changelog offset they hold (``changelog_offset``); the
records after it are applied in order: rows are upserted or deleted, seen keys added. Both are
idempotent, so applying a record twice (a crash between the seen set's flush and the state's
commit) changes nothing. An empty data directory (a new machine) replays the whole partition.
"""

from __future__ import annotations

import logging

from dualplane.control_plane.frontier.changelog import SEEN_PREFIX, Changelog
from dualplane.control_plane.frontier.seen import SeenSet
from dualplane.control_plane.frontier.store import FrontierState
from dualplane.core.web.urls import KEY_BYTES

log = logging.getLogger(__name__)

COMMIT_EVERY = 10_000  # records applied between local commits, so a long replay can be resumed


def catch_up(changelog: Changelog, state: FrontierState, seen: SeenSet) -> int:
    """Apply every changelog record after the local offset; how many were applied."""
    offset = int(state.meta("changelog_offset") or -1)
    applied = 0
    for key, value, record_offset in changelog.read(offset + 1):
        if key.startswith(SEEN_PREFIX):
            packed: bytes = value or b""
            seen.add_many(packed[i : i + KEY_BYTES] for i in range(0, len(packed), KEY_BYTES))
        else:
            state.apply(key, value)
        offset = record_offset
        applied += 1
        if applied % COMMIT_EVERY == 0:
            _save(state, seen, offset)
    if applied:
        _save(state, seen, offset)
        state.restored()
        log.info("changelog %s[%d]: applied %d records, now at offset %d",
                 changelog.topic, changelog.shard, applied, offset)  # fmt: skip
    return applied


def _save(state: FrontierState, seen: SeenSet, offset: int) -> None:
    seen.flush()
    state.set_meta("changelog_offset", str(offset))
    state.commit()
