"""A domain's request rate and the limits the fleet obeys, P_d and the delay, both ways.

The throttle policy thinks in requests per second (:mod:`data_plane.throttle.policy`); the fleet
obeys a concurrency P_d and a delay (:mod:`control_plane.fetcher.politeness`). A slot of P_d keeps
its permit for the delay times a random 1 to 1 + ``DUALPLANE_FETCH_DELAY_JITTER`` factor counted
from the request's start, or until the request ends if that is later; so one slot sends a request
every ``max(latency, delay * (1 + jitter / 2))`` ms on average, and P_d slots send ``P_d * 1000 /
that``. Paced start to start, the fleet's own time per request (the task, the permit, the Kafka
events: ~35 ms, more under load) is not in the rate as long as a slot's delay leaves room for it
beyond the latency: a commanded rate is the rate sent.

For a rate below the unthrottled one the fewest slots are used, each with a longer delay: a site's
limit is usually "at most R requests in any second", and independent slots can line up into a
burst over it, where one slot's requests never come closer than its delay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INT32_MAX = 2**31 - 1  # delay_ms is an Avro int
# A slot's delay leaves this much beyond the latency for the fleet's own work per request (~35 ms
# measured in the loop on a quiet machine): a slot that cannot keep its delay sends less than the rate
# set. Another slot is added rather than go below it; more slots can line up into bursts.
MIN_SLOT_DELAY_MS = 50


@dataclass(frozen=True)
class Pace:
    """How the fleet's requests to one domain are spaced: the latency it sees and its hold jitter."""

    latency_ms: float = 0.0
    jitter: float = 0.0

    def rate(self, concurrency: int, delay_ms: int) -> float:
        """Requests per second ``concurrency`` slots with ``delay_ms`` send, on average."""
        period_ms = max(self.latency_ms, delay_ms * (1 + self.jitter / 2))
        return concurrency * 1000 / max(period_ms, 1.0)

    def limits(self, rate_rps: float, ceiling: int, base_delay_ms: int) -> tuple[int, int]:
        """``(P_d, delay_ms)`` sending about ``rate_rps``: the fewest slots whose delay is at least
        ``base_delay_ms`` and :data:`MIN_SLOT_DELAY_MS` beyond the latency; ``(ceiling,
        base_delay_ms)`` when that is slower than asked."""
        if rate_rps >= self.rate(ceiling, base_delay_ms):
            return ceiling, base_delay_ms
        stretch = 1 + self.jitter / 2
        slot_ms = max(base_delay_ms, self.latency_ms + MIN_SLOT_DELAY_MS) * stretch
        concurrency = min(ceiling, max(1, math.ceil(rate_rps * slot_ms / 1000)))
        delay_ms = concurrency * 1000 / max(rate_rps, 1e-6) / stretch
        return concurrency, min(INT32_MAX, max(base_delay_ms, math.ceil(delay_ms)))
