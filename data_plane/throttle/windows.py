"""Per-domain window values, the step buckets they are summed from, and which window to judge when.

The processor judges *hopping* windows (``size_s`` long, starting every ``step_s``) but stores
*tumbling* buckets of one step each: a window is the sum of the ``size_s / step_s`` buckets it spans.
The counts are the same; each event then changes one bucket, so one changelog write, where a hopping
table writes every window the event falls in (10 with the default 10 min / 1 min: most of the
processor's CPU, and of Kafka's, went to those writes under a crawl).

A bucket value is a small JSON-safe dict of counters. It also holds the source partition and offset
of the last event added, which makes adding idempotent: after a crash Faust redelivers the events
after the last committed offset, and an event already in a bucket (its changelog write made it)
is not counted twice. And it holds the times of its first and last fetch: every rate is counts
divided by the time the domain was actually crawled (:func:`span_s`), never by a window's or a
step's length: a fresh domain crawled for 4 s of a 10-minute window sent its 20 fetches in 4 s,
not in 60.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from faust.types.windows import WindowRange_from_start

from dualplane.data_plane.throttle.events import FetchSample
from dualplane.data_plane.throttle.signals import MIN_SPAN_S, WindowCounts

WindowRange = tuple[float, float]
COUNTERS = ("total", "blocked", "timeouts", "server_errors", "overloaded", "resets", "latency_ms_sum")


def add_sample(value: Mapping[str, Any], sample: FetchSample, partition: int, offset: int) -> dict[str, Any]:
    """``value`` with ``sample`` counted; unchanged if it already counted the event at ``offset``."""
    if value.get("partition") == partition and value.get("offset", -1) >= offset:
        return dict(value)
    retry_after = value.get("max_retry_after_s")
    if sample.retry_after_s is not None:
        retry_after = max(retry_after or 0.0, sample.retry_after_s)
    return {
        "total": value.get("total", 0) + 1,
        "blocked": value.get("blocked", 0) + sample.blocked,
        "timeouts": value.get("timeouts", 0) + sample.timed_out,
        "server_errors": value.get("server_errors", 0) + sample.server_error,
        "overloaded": value.get("overloaded", 0) + sample.overloaded,
        "resets": value.get("resets", 0) + sample.reset,
        "latency_ms_sum": value.get("latency_ms_sum", 0) + sample.latency_ms,
        "latency_ms_max": max(value.get("latency_ms_max", 0), sample.latency_ms),
        "max_retry_after_s": retry_after,
        "first_s": min(value.get("first_s", math.inf), sample.fetched_at_s),
        "last_s": max(value.get("last_s", -math.inf), sample.fetched_at_s),
        "partition": partition,
        "offset": offset,
    }


def bucket_ranges(window: WindowRange, size_s: float, step_s: float) -> list[WindowRange]:
    """The step buckets that make up ``window``, keyed as Faust keys a tumbling table's windows."""
    start = window[0]
    return [WindowRange_from_start(start + i * step_s, step_s) for i in range(round(size_s / step_s))]


def merged(values: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The window value of buckets ``values``: their counters summed, the first fetch's time, and
    of the steps with a block the one that let the most through per second (no partition or offset)."""
    total: dict[str, Any] = {}
    best_pass_rps = -1.0
    for value in values:
        if not value:
            continue
        for name in COUNTERS:
            total[name] = total.get(name, 0) + value.get(name, 0)
        total["latency_ms_max"] = max(total.get("latency_ms_max", 0), value.get("latency_ms_max", 0))
        if "first_s" in value:
            total["first_s"] = min(total.get("first_s", math.inf), value["first_s"])
        if value.get("blocked", 0):  # a step the site pushed back in: what it let through then
            passed = value.get("total", 0) - value["blocked"]
            span = bucket_span_s(value)
            pass_rps = passed / max(span, MIN_SPAN_S)
            if pass_rps > best_pass_rps:
                best_pass_rps = pass_rps
                total["blocked_step_passed"] = passed
                total["blocked_step_sent"] = value.get("total", 0)
                total["blocked_step_span_s"] = span
        retry_after = value.get("max_retry_after_s")
        if retry_after is not None:
            total["max_retry_after_s"] = max(total.get("max_retry_after_s") or 0.0, retry_after)
    return total


def bucket_span_s(value: Mapping[str, Any]) -> float:
    """Seconds from a bucket's first fetch to its last (0.0 when it predates those times): the
    time its traffic took, where the step's length counts the quiet after a burst too."""
    if "first_s" not in value or "last_s" not in value:
        return 0.0
    return max(0.0, float(value["last_s"]) - float(value["first_s"]))


def counts_of(value: Mapping[str, Any], span_s: float = 0.0, step_s: float = 0.0) -> WindowCounts:
    """The policy's view of a window value (an empty value is an empty window) holding ``span_s``
    seconds of traffic in buckets of ``step_s``."""
    return WindowCounts(
        total=int(value.get("total", 0)),
        blocked=int(value.get("blocked", 0)),
        timeouts=int(value.get("timeouts", 0)),
        server_errors=int(value.get("server_errors", 0)),
        max_retry_after_s=value.get("max_retry_after_s"),
        overloaded=int(value.get("overloaded", 0)),
        resets=int(value.get("resets", 0)),
        span_s=span_s,
        latency_ms_sum=float(value.get("latency_ms_sum", 0)),
        blocked_step_passed=int(value.get("blocked_step_passed", 0)),
        blocked_step_sent=int(value.get("blocked_step_sent", 0)),
        step_s=step_s,
        blocked_step_span_s=float(value.get("blocked_step_span_s", 0.0)),
    )


def span_s(
    window: WindowRange,
    now_s: float,
    step_s: float,
    first_s: float | None = None,
    since_s: float | None = None,
) -> float:
    """Seconds of traffic ``window`` holds at ``now_s``: from the domain's first fetch in it
    (``first_s``) or the last change of its pace (``since_s``), whichever is later, to now; at least
    :data:`MIN_SPAN_S` (or one step, if shorter), at most the window's length.

    Never from the window's start: a hopping window of 10 minutes opens before the domain is first
    crawled, and counting from there divided a fresh domain's first 4 s of traffic by a minute.
    """
    start = max(window[0], first_s if first_s is not None else window[0], since_s or window[0])
    return min(window[1] - window[0], max(min(MIN_SPAN_S, step_s), now_s - start))


def summary(value: Mapping[str, Any], window: WindowRange | None) -> dict[str, Any]:
    """A window value for people: counts, ratio, latency, bounds (epoch seconds)."""
    counts = counts_of(value)
    return {
        "start_s": window[0] if window else None,
        "end_s": window[1] if window else None,
        "total": counts.total,
        "blocked": counts.blocked,
        "timeouts": counts.timeouts,
        "server_errors": counts.server_errors,
        "blocked_ratio": round(counts.blocked_ratio, 4),
        "latency_ms_avg": round(value["latency_ms_sum"] / counts.total, 1) if counts.total else None,
        "latency_ms_max": value.get("latency_ms_max"),
        "max_retry_after_s": counts.max_retry_after_s,
    }


def window_to_judge(
    now_s: float, size_s: float, step_s: float, last_change_s: float | None
) -> WindowRange | None:
    """The hopping window whose counts decide at ``now_s``.

    Normally the oldest window still open at ``now_s``: it covers the last ``size_s - step_s``
    seconds and more, the fullest view there is. (Faust's ``.current()`` is the *newest* window,
    which holds at most one step of events.) After a change of limits inside that span, the oldest
    window starting after the change instead: a decision is judged only on what followed it, so
    blocks from before a halving cannot trigger a second one. ``None`` until that window exists.
    """
    newest_start = math.floor(now_s / step_s) * step_s
    start = newest_start - size_s + step_s
    if last_change_s is not None:
        start = max(start, math.ceil(last_change_s / step_s) * step_s)
    if start > newest_start:
        return None
    # Faust keys windows by exactly this tuple; build it the same way so the lookup hits.
    return WindowRange_from_start(float(start), float(size_s))
