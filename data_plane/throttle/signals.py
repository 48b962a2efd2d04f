"""What a window of fetches says about a site: counts, rates, latency, and the weighted pushback.

The throttle policy (:mod:`data_plane.throttle.policy`) judges these; the processor builds them from
its step buckets (:func:`data_plane.throttle.windows.counts_of`).
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_SPAN_S = 1.0  # a site's limit counts per second: a shorter burst is its rate over a second
# Pushback per fetch outcome (a 503 is told apart by status, see WindowCounts.overloaded).
SIGNAL_WEIGHTS = {"blocked": 1.0, "overloaded": 1.0, "resets": 0.5, "server_errors": 0.25, "timeouts": 0.25}


@dataclass(frozen=True)
class WindowCounts:
    """Fetches of one domain in the window being judged.

    ``blocked`` counts 429, 403 and challenge pages; ``server_errors`` every 5xx, of which
    ``overloaded`` the 503s; ``resets`` failed connections. ``span_s`` is how many seconds of traffic
    the window holds (0: unknown), which turns counts into rates.
    """

    total: int = 0
    blocked: int = 0
    timeouts: int = 0
    server_errors: int = 0
    max_retry_after_s: float | None = None
    overloaded: int = 0
    resets: int = 0
    span_s: float = 0.0
    latency_ms_sum: float = 0.0
    # Of the window's buckets (``step_s`` each) with a block, the one that let the most through per
    # second: what it let through, what it sent, and the seconds from its first fetch to its last
    # (0: unknown, the whole step). Against a limit per second these measure it; a window's mean
    # does not (fetchers rest after each block, and a burst is over in a second).
    blocked_step_passed: int = 0
    blocked_step_sent: int = 0
    step_s: float = 0.0
    blocked_step_span_s: float = 0.0

    @property
    def blocked_ratio(self) -> float:
        """Blocked share of ``total``; 0.0 for an empty window."""
        return self.blocked / self.total if self.total else 0.0

    @property
    def pushback(self) -> float:
        """The weighted count of the site's pushback (:data:`SIGNAL_WEIGHTS`)."""
        other_5xx = max(0, self.server_errors - self.overloaded)
        w = SIGNAL_WEIGHTS
        return (
            self.blocked * w["blocked"]
            + self.overloaded * w["overloaded"]
            + self.resets * w["resets"]
            + other_5xx * w["server_errors"]
            + self.timeouts * w["timeouts"]
        )

    @property
    def pushback_ratio(self) -> float:
        return min(1.0, self.pushback / self.total) if self.total else 0.0

    @property
    def rate_rps(self) -> float | None:
        """Requests per second the fleet sent in the window; None when its span is unknown."""
        return self.total / self.span_s if self.span_s > 0 else None

    @property
    def pass_rps(self) -> float | None:
        """Requests per second the site let through without pushback."""
        return max(0.0, self.total - self.pushback) / self.span_s if self.span_s > 0 else None

    @property
    def peak_pass_rps(self) -> float | None:
        """The most the site let through in one step that had blocks, per second of that step's traffic."""
        span = self._blocked_step_s()
        return self.blocked_step_passed / span if span and self.blocked_step_sent else None

    @property
    def peak_sent_rps(self) -> float | None:
        """What the fleet sent in that step, per second of its traffic: a rate the site refused."""
        span = self._blocked_step_s()
        return self.blocked_step_sent / span if span and self.blocked_step_sent else None

    def _blocked_step_s(self) -> float:
        """The time the busiest blocked step's traffic took: its first fetch to its last, at least a
        second (a site's limit is per second) and at most the step; the step when unknown."""
        if self.blocked_step_span_s <= 0:
            return self.step_s
        floor = min(MIN_SPAN_S, self.step_s) if self.step_s > 0 else MIN_SPAN_S
        span = max(floor, self.blocked_step_span_s)
        return min(span, self.step_s) if self.step_s > 0 else span

    @property
    def latency_ms(self) -> float | None:
        """Mean latency of the window's fetches."""
        return self.latency_ms_sum / self.total if self.total else None
