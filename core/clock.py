"""The one wall clock: aware UTC datetimes, so no naive timestamp ever crosses a process."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """Now, in UTC, timezone-aware."""
    return datetime.now(UTC)
