"""Publication dates as pages write them, to aware UTC datetimes.

Reads ISO 8601 (``2024-03-05T08:30:00+01:00``, ``2024-03-05T08:30Z``, ``2024-03-05``) and RFC 2822
(``Tue, 05 Mar 2024 08:30:00 GMT``). A time without an offset is taken as UTC and a bare date as
midnight UTC: pages rarely say otherwise, and a fixed rule keeps records deterministic.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_ISO_PREFIX = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
_EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)


def parse_datetime(value: object) -> datetime | None:
    """``value`` (a string or datetime) as an aware UTC datetime, or ``None`` when it is not a date.

    Dates before 1990 are rejected: on the web they are placeholders, not publication dates.
    """
    if isinstance(value, datetime):
        parsed: datetime | None = value
    elif isinstance(value, str):
        parsed = _iso(value.strip()) or _rfc2822(value.strip())
    else:
        parsed = None
    if parsed is None:
        return None
    aware = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    return aware.astimezone(UTC) if aware >= _EARLIEST else None


def _iso(text: str) -> datetime | None:
    match = _ISO_PREFIX.match(text)
    if match is None:
        return None
    found = match.group().replace(",", ".")
    if re.search(r"[+-]\d{4}$", found) and "T" in found.upper():
        found = f"{found[:-2]}:{found[-2:]}"  # +0100 -> +01:00 for older Pythons' fromisoformat
    try:
        return datetime.fromisoformat(found.replace("Z", "+00:00"))
    except ValueError:
        return None


def _rfc2822(text: str) -> datetime | None:
    try:
        return parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
