"""From a fetch response to its outcome class, with Retry-After and a readable reason.

The challenge detectors of :mod:`control_plane.fetcher.challenges` are checked first, so a captcha
served with 200 (or AWS WAF's 405) is ``blocked_challenge``, not ``ok``. They are skipped for 3xx,
for 404/410 (a gone page stays gone even if its tiny error page has a captcha form) and for 429
(``rate_limited`` already backs off, and keeps Retry-After). Then the status decides:

======================================  ==================  ===================================
status                                  outcome             why
======================================  ==================  ===================================
2xx                                     ok
304                                     not_modified        the revisited page did not change
3xx (left unfollowed)                   redirect            the target is queued as a URL
404, 410                                not_found           the page is gone
429                                     rate_limited        with Retry-After kept
401, 403, 407, 451                      forbidden           access refused; backed off hard
408                                     timeout             the server gave up waiting for us
other 4xx (400, 405, 406, 414, 422…)    invalid_content     the same request fails again
5xx and anything else                   server_error        transient
======================================  ==================  ===================================
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Container
from dataclasses import dataclass
from datetime import UTC, datetime

from dualplane.control_plane.fetcher.backends.base import FetchResponse
from dualplane.control_plane.fetcher.challenges import find_challenge
from dualplane.control_plane.fetcher.retry_policy import Outcome

# A Retry-After beyond a day is a misconfiguration or a ban; the retry policy caps it further.
MAX_RETRY_AFTER_S = 86_400.0
NO_CHALLENGE_STATUSES = frozenset({404, 410, 429})

# First match wins; anything unmatched (5xx, non-standard codes) is a server error.
STATUS_RULES: tuple[tuple[Container[int], Outcome, str], ...] = (
    (range(200, 300), Outcome.OK, "fetched"),
    (frozenset({304}), Outcome.NOT_MODIFIED, "not modified since the validators' response"),
    (range(300, 400), Outcome.REDIRECT, "redirect not followed"),
    (frozenset({404, 410}), Outcome.NOT_FOUND, "the page is gone"),
    (frozenset({429}), Outcome.RATE_LIMITED, "too many requests"),
    (frozenset({401, 403, 407, 451}), Outcome.FORBIDDEN, "access refused"),
    (frozenset({408}), Outcome.TIMEOUT, "the server timed out waiting for the request"),
    (
        range(400, 500),
        Outcome.INVALID_CONTENT,
        "the server refuses this request as sent; retrying will not help",
    ),
)


@dataclass(frozen=True)
class Classification:
    """The outcome of one fetch; ``retry_after_s`` is the server's Retry-After (429 and 503)."""

    outcome: Outcome
    retry_after_s: float | None
    detail: str


def classify(response: FetchResponse) -> Classification:
    """Classify ``response`` by its status, its headers and, for challenges, its body."""
    status = response.status
    retry_after_s = (
        parse_retry_after(response.headers.get("retry-after"), response.headers.get("date"))
        if status in (429, 503)
        else None
    )
    if _may_be_challenge(status):
        detector = find_challenge(status, response.headers, response.body)
        if detector is not None:
            detail = f"HTTP {status}: {detector.vendor} challenge or block page ({detector.name})"
            return Classification(Outcome.BLOCKED_CHALLENGE, retry_after_s, detail)
    outcome, why = _by_status(status)
    return Classification(outcome, retry_after_s, f"HTTP {status}: {why}")


def _may_be_challenge(status: int) -> bool:
    return not 300 <= status < 400 and status not in NO_CHALLENGE_STATUSES


def _by_status(status: int) -> tuple[Outcome, str]:
    for statuses, outcome, why in STATUS_RULES:
        if status in statuses:
            return outcome, why
    return Outcome.SERVER_ERROR, "server error"


def parse_retry_after(
    value: str | None, date: str | None = None, now: datetime | None = None
) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP-date), or None.

    An HTTP-date is measured against the response's own ``Date`` header when it has one, so a
    server whose clock is off still means what it says; otherwise against ``now`` (default: the
    current time). The result is clamped to [0, :data:`MAX_RETRY_AFTER_S`]; garbage gives None.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        retry_at = _http_date(text)
        if retry_at is None:
            return None
        reference = _http_date(date) if date else None
        seconds = (retry_at - (reference or now or datetime.now(UTC))).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _http_date(text: str) -> datetime | None:
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
