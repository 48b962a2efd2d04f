"""How many tasks of a domain the frontier keeps outstanding: what its pace can use, no more.

Unpaced, a domain may have k x P_d tasks outstanding (``DUALPLANE_FRONTIER_OUTSTANDING_PER_SLOT``
x its current P_d). A paced domain (a throttle command's delay, robots.txt's Crawl-delay or the
configured minimum delay) starts one request per slot every delay: ``P_d / (delay x (1 + jitter /
2))`` a second, the same pacing the fetchers apply (``control_plane.fetcher.politeness``). It gets
that rate times ``DUALPLANE_FRONTIER_PACED_TRANSIT_S`` slots (the time a task needs from its issue
to its final report when nothing but its domain's pace holds it: the lane, the fetch, the
hand-off, the report), at least :data:`FLOOR` and at most k x P_d.

Why: every task outstanding sits in the shared FIFO lane or in a fetcher's prefetch window until
its domain's permit frees. With k x P_d each, 45 hosts with a Crawl-delay of 15 s (0.5 requests/s
each) put 2,880 tasks in the lane; a task then spent ~100 s in it, and every domain, however fast
its site allowed, got at most its tasks per transit time (0.63/s each, a host allowing 20/s
included) on a fleet using a third of its capacity. Sized by rate, a slow domain's tasks wait in
the frontier's backlog instead, and the lane's order is in proportion to what each domain can take.
"""

from __future__ import annotations

import math

from dualplane.core.limits import Limits

# Fewest slots of a paced domain: one waiting while another is at the site, so a report's round
# trip never leaves a permit idle.
FLOOR = 2


def paced_slots(*, concurrency: int, delay_ms: int, per_slot: int, transit_s: float, jitter: float) -> int:
    """Outstanding tasks for a domain with ``concurrency`` slots each holding ``delay_ms`` (mean
    stretch ``1 + jitter / 2``): its rate times ``transit_s``, within ``[FLOOR, per_slot x
    concurrency]``; the ceiling when it is not paced (no delay) or ``transit_s`` is 0 (off)."""
    ceiling = per_slot * concurrency
    if delay_ms <= 0 or transit_s <= 0:
        return ceiling
    rate_rps = concurrency * 1000 / (delay_ms * (1 + jitter / 2))
    return max(min(FLOOR, ceiling), min(ceiling, math.ceil(rate_rps * transit_s)))


class DomainSlots:
    """The one owner of a domain's slot count in a frontier shard."""

    def __init__(self, *, per_slot: int, transit_s: float, jitter: float, floor_delay_ms: int) -> None:
        self.per_slot = per_slot
        self.transit_s = transit_s
        self.jitter = jitter
        self.floor_delay_ms = floor_delay_ms  # DUALPLANE_LIMIT_DOMAIN_DELAY_MS: no command undercuts it
        # robots.txt's Crawl-delay per domain, as its tasks carry it. Memory only: after a restart a
        # domain counts as unpaced by robots.txt until its next admitted task (k x P_d: as before).
        self._crawl_delay_ms: dict[str, int] = {}

    def saw(self, domain: str, crawl_delay_ms: int | None) -> None:
        """A task of ``domain`` carrying robots.txt's Crawl-delay (None: none) was admitted."""
        if crawl_delay_ms:
            self._crawl_delay_ms[domain] = crawl_delay_ms
        else:
            self._crawl_delay_ms.pop(domain, None)

    def for_domain(self, domain: str, limits: Limits) -> int:
        """How many of ``domain``'s tasks may be outstanding under its current ``limits``."""
        delay_ms = max(limits.delay_ms, self._crawl_delay_ms.get(domain, 0), self.floor_delay_ms)
        return paced_slots(
            concurrency=limits.concurrency,
            delay_ms=delay_ms,
            per_slot=self.per_slot,
            transit_s=self.transit_s,
            jitter=self.jitter,
        )
