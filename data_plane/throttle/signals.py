"""What a window of fetches says about a site: counts, rates, latency, and the weighted pushback.

The throttle policy (:mod:`data_plane.throttle.policy`) judges these; the processor builds them from
its step buckets (:func:`data_plane.throttle.windows.counts_of`).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    # Of the window's buckets (``step_s`` each) with a block: the most fetches one let through,
    # and the most one sent. Against a limit per second these measure it; a window's mean does
    # not (fetchers rest after each block, and a burst is over in a second).
    blocked_step_passed: int = 0
    blocked_step_sent: int = 0
    step_s: float = 0.0

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
        """The most the site let through in one step that had blocks, per second."""
        return self.blocked_step_passed / self.step_s if self.step_s > 0 and self.blocked_step_sent else None

    @property
    def peak_sent_rps(self) -> float | None:
        """The most the fleet sent in one step that had blocks, per second: a rate the site refused."""
        return self.blocked_step_sent / self.step_s if self.step_s > 0 and self.blocked_step_sent else None

    @property
    def latency_ms(self) -> float | None:
        """Mean latency of the window's fetches."""
        return self.latency_ms_sum / self.total if self.total else None
