"""The demo's anti-bot host: the sample site's first host blocks beyond a few requests per second, the
throttle halves that domain's P_d, the site relaxes once it has, and the throttle recovers it.

The processor runs at the shipped defaults: its fast layer reacts within seconds, its 10-minute
windows stay the fleet's memory. :class:`ThrottleWatch` records what the fleet ran at (the same
:class:`ThrottleView` a fetcher holds) for the live view and the summary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from dualplane.core.settings import ThrottleSettings
from dualplane.data_plane.throttle import ThrottleView
from dualplane.sample_site import AntiBot, SampleSite

PROTECTED_HOST = 0
ANTI_BOT = AntiBot(max_rps=4.0, mode="429", retry_after_s=1)
RELAX_AFTER_S = 3.0  # the site relaxes this long after the throttle halved the domain


def throttle_tuning(base: ThrottleSettings) -> ThrottleSettings:
    """The processor's settings for the demo (they reach the child process through ``to_env``).

    The loop runs at the shipped defaults: the processor's fast layer (seconds) backs off and climbs
    back within the crawl, as it does for a user. Only what a short-lived demo needs differs: the
    processor reads the fetch events from the start (it may start after the first fetches) and keeps
    no snapshot between runs."""
    return base.model_copy(update={"offset_reset": "earliest", "snapshot_path": ""})


@dataclass
class ThrottleWatch:
    """P_d of the protected domain over time: when it was halved, when it came back."""

    domain: str
    ceiling: int
    started: float = field(default_factory=time.monotonic)
    lowest: int = 0
    halved_at_s: float | None = None
    relaxed_at_s: float | None = None
    recovered_at_s: float | None = None

    def observe(self, view: ThrottleView, site: SampleSite) -> None:
        """Look at the fleet's limits once; relax the site once the throttle has halved the domain."""
        now_s = time.monotonic() - self.started
        concurrency = view.details(self.domain).concurrency
        self.lowest = min(self.lowest or concurrency, concurrency)
        if self.halved_at_s is None and concurrency * 2 <= self.ceiling:
            self.halved_at_s = now_s
        if (
            self.halved_at_s is not None
            and self.relaxed_at_s is None
            and now_s - self.halved_at_s >= RELAX_AFTER_S
        ):
            site.set_anti_bot(PROTECTED_HOST, None)
            self.relaxed_at_s = now_s
        if self.relaxed_at_s is not None and self.recovered_at_s is None and concurrency >= self.ceiling:
            self.recovered_at_s = now_s

    @property
    def done(self) -> bool:
        return self.recovered_at_s is not None

    def story(self) -> str:
        """One line for the summary."""
        if self.halved_at_s is None:
            return f"{self.domain}: never halved (P_d stayed at {self.ceiling})"
        line = f"{self.domain}: P_d {self.ceiling} -> {self.lowest} at {self.halved_at_s:.1f} s"
        if self.recovered_at_s is None:
            return line + ", not recovered before the crawl ended"
        relaxed_s, recovered_s = self.relaxed_at_s or 0.0, self.recovered_at_s
        return line + f", site relaxed at {relaxed_s:.1f} s, back to {self.ceiling} at {recovered_s:.1f} s"
