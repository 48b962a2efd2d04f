"""The seen set: exact mode, the switch to a Bloom filter, persistence and crash semantics."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dualplane.control_plane.frontier.exceptions import SeenSetCorrupt
from dualplane.control_plane.frontier.seen import SeenSet
from dualplane.core.web.urls import url_key
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.unit


def keys(start: int, stop: int, prefix: str = "https://example.com/page/") -> list[bytes]:
    return [url_key(f"{prefix}{i}") for i in range(start, stop)]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "seen.sqlite3"


def small(path: Path, **overrides: int) -> SeenSet:
    options = {"exact_limit": 100, "expected_items": 10_000, "journal_limit": 1_000_000} | overrides
    return SeenSet(path, **options)


def test_add_reports_new_keys_in_exact_mode(db_path: Path) -> None:
    with small(db_path) as seen:
        first, second = keys(0, 2)

        assert seen.add(first) is True
        assert seen.add(first) is False
        assert seen.add_many([second, first, second]) == [True, False, False]
        assert first in seen and second in seen
        assert keys(2, 3)[0] not in seen
        assert (len(seen), seen.mode) == (2, "exact")


def test_keys_must_be_16_byte_url_keys(db_path: Path) -> None:
    with small(db_path) as seen, pytest.raises(ValueError, match="16 bytes"):
        seen.add(b"https://example.com/")


def test_flushed_keys_survive_a_reopen_and_unflushed_ones_do_not(db_path: Path) -> None:
    with small(db_path) as seen:
        seen.add_many(keys(0, 50))
        seen.flush()
        seen.add_many(keys(50, 60))  # closed without a flush: forgotten, like a crash

    with small(db_path) as seen:
        assert len(seen) == 50
        assert all(key in seen for key in keys(0, 50))
        assert not any(key in seen for key in keys(50, 60))


def test_switches_to_bloom_past_the_exact_limit_and_keeps_every_key(db_path: Path) -> None:
    with small(db_path) as seen:
        assert seen.add_many(keys(0, 100)) == [True] * 100
        assert seen.mode == "exact"

        assert seen.add(keys(100, 101)[0]) is True
        assert all(key in seen for key in keys(0, 101))
        assert seen.add_many(keys(0, 101)) == [False] * 101
        assert (seen.mode, len(seen)) == ("bloom", 101)


def test_bloom_mode_persists_through_the_journal(db_path: Path) -> None:
    with small(db_path) as seen:
        seen.add_many(keys(0, 500))
        seen.flush()  # the first flush after the switch writes the Bloom file
        seen.add_many(keys(500, 900))  # journaled in SQLite, not yet in the file
        seen.flush()

    with small(db_path) as seen:
        assert (seen.mode, len(seen)) == ("bloom", 900)
        assert all(key in seen for key in keys(0, 900))


def test_bloom_file_is_rewritten_atomically_when_the_journal_is_full(db_path: Path) -> None:
    with small(db_path, journal_limit=50) as seen:
        seen.add_many(keys(0, 200))
        seen.flush()
        first_file = seen.bloom_path.read_bytes()
        seen.add_many(keys(200, 300))
        seen.flush()

        assert seen.bloom_path.read_bytes() != first_file
        assert list(db_path.parent.glob("*.tmp")) == []

    with small(db_path) as seen:
        assert all(key in seen for key in keys(0, 300))


def test_the_switch_itself_is_not_durable_before_a_flush(db_path: Path) -> None:
    with small(db_path) as seen:
        seen.add_many(keys(0, 80))
        seen.flush()
        seen.add_many(keys(80, 150))
        assert seen.mode == "bloom"

    with small(db_path) as seen:
        assert (seen.mode, len(seen)) == ("exact", 80)


def test_unflushed_keys_are_forgotten_after_a_crash_and_flushed_ones_kept(db_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from dualplane.control_plane.frontier.seen import SeenSet
        from dualplane.core.web.urls import url_key

        seen = SeenSet(Path({str(db_path)!r}), exact_limit=100, expected_items=10_000)
        seen.add_many(url_key(f"https://example.com/page/{{i}}") for i in range(300))
        seen.flush()
        seen.add_many(url_key(f"https://example.com/page/{{i}}") for i in range(300, 400))
        seen.flush()
        seen.add_many(url_key(f"https://example.com/late/{{i}}") for i in range(200))
        os._exit(0)  # a crash: no flush, no close
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO_ROOT)

    with small(db_path) as seen:
        assert (seen.mode, len(seen)) == ("bloom", 400)
        assert all(key in seen for key in keys(0, 400))
        forgotten = sum(key not in seen for key in keys(0, 200, prefix="https://example.com/late/"))
        assert forgotten >= 195  # all of them, give or take a false positive


def test_a_missing_bloom_file_is_a_readable_error(db_path: Path) -> None:
    with small(db_path) as seen:
        seen.add_many(keys(0, 200))
        seen.flush()
    seen.bloom_path.unlink()

    with pytest.raises(SeenSetCorrupt, match=r"seen\.sqlite3\.bloom is missing"):
        small(db_path)


def test_false_positive_rate_is_near_the_target(db_path: Path) -> None:
    with SeenSet(db_path, exact_limit=0, expected_items=20_000, false_positive_rate=0.01) as seen:
        seen.add_many(keys(0, 20_000))
        false_positives = sum(key in seen for key in keys(0, 20_000, prefix="https://other.example/"))

    assert false_positives / 20_000 < 0.02


def test_invalid_sizes_are_rejected(db_path: Path) -> None:
    with pytest.raises(ValueError, match="exact_limit <= expected_items"):
        SeenSet(db_path, exact_limit=10, expected_items=5)
