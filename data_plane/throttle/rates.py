"""A domain's request rate and the limits the fleet obeys, P_d and the delay, both ways.

The throttle policy thinks in requests per second (:mod:`data_plane.throttle.policy`); the fleet
obeys a concurrency P_d and a delay held after each request
(:mod:`control_plane.fetcher.politeness`). One slot of P_d sends a request every
``latency + delay * (1 + jitter / 2)`` ms on average (the hold is the delay times a random 1 to
1 + ``DUALPLANE_FETCH_DELAY_JITTER`` factor), so P_d slots send ``P_d * 1000 / that``.

For a rate below the unthrottled one the fewest slots are used, each with a longer delay: a site's
limit is usually "at most R requests in any second", and independent slots can line up into a
burst over it, where one slot's requests never come closer than its delay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INT32_MAX = 2**31 - 1  # delay_ms is an Avro int
# A slot is added before a delay would drop below this: the fleet's own time per request (task,
# permit, commit: ~35 ms measured in the loop) is not in the rate, and it distorts short delays most;
# more slots line up into bursts (100 ms held R=20 at 48% in the real loop, 50 ms 87-95% simulated).
MIN_SLOT_DELAY_MS = 50


@dataclass(frozen=True)
class Pace:
    """How the fleet's requests to one domain are spaced: the latency it sees and its hold jitter."""

    latency_ms: float = 0.0
    jitter: float = 0.0

    def rate(self, concurrency: int, delay_ms: int) -> float:
        """Requests per second ``concurrency`` slots with ``delay_ms`` send, on average."""
        period_ms = self.latency_ms + delay_ms * (1 + self.jitter / 2)
        return concurrency * 1000 / max(period_ms, 1.0)

    def limits(self, rate_rps: float, ceiling: int, base_delay_ms: int) -> tuple[int, int]:
        """``(P_d, delay_ms)`` sending about ``rate_rps``: the fewest slots whose delay is at least
        ``base_delay_ms`` and :data:`MIN_SLOT_DELAY_MS`; ``(ceiling, base_delay_ms)`` when that is
        slower than asked."""
        if rate_rps >= self.rate(ceiling, base_delay_ms):
            return ceiling, base_delay_ms
        slot_ms = self.latency_ms + max(base_delay_ms, MIN_SLOT_DELAY_MS) * (1 + self.jitter / 2)
        concurrency = min(ceiling, max(1, math.ceil(rate_rps * max(slot_ms, 1.0) / 1000)))
        delay_ms = (concurrency * 1000 / max(rate_rps, 1e-6) - self.latency_ms) / (1 + self.jitter / 2)
        return concurrency, min(INT32_MAX, max(base_delay_ms, math.ceil(delay_ms)))
