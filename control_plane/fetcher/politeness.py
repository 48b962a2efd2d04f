"""A fetcher's own politeness per domain, on top of the fleet-wide permits: pure bookkeeping.

The permits (:mod:`brokers.amqp.permits`) bound concurrency across the fleet, but the frontier
resizes them only after a throttle command reached it and fetchers gave held permits back. A
fetcher obeys a command the moment its :class:`~data_plane.throttle.view.ThrottleView` has it:

- **Local cap.** At most the domain's current concurrency of requests per process, counting a
  request from its start until its permit is released (the politeness delay after the request
  started, or its end if later; :func:`release_in_s`), exactly as a permit counts. So a lowered
  P_d holds at once in each process, even before the frontier destroyed the surplus permits.
- **Pause.** A paused domain's tasks are not started (the runner defers them, no attempt).
- **Cooldown.** After a 429, 403 or challenge (``cool_down_domain``), the fetcher sends nothing
  more to the domain for :func:`core.limits.cooldown_s` (Retry-After, or
  ``DUALPLANE_THROTTLE_COOLDOWN_BASE_MS`` without one, capped at
  ``DUALPLANE_THROTTLE_COOLDOWN_CAP_MS``; the throttle policy asks the same function), so it does
  not hammer the site while the processor is still counting the window that will slow the whole
  fleet down.

No I/O and an injectable clock: the runner calls it from its connection thread only.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Literal

from dualplane.core.limits import cooldown_s

MAX_PERMIT_WAIT_S = 60.0

Verdict = Literal["go", "wait", "defer"]
"""``go``: try for a permit now; ``wait``: not now, keep the task a while; ``defer``: send it round
the shortest delay tier (a deferral, not an attempt)."""


def delay_ms(throttle_delay_ms: int, crawl_delay_ms: int | None, floor_ms: int) -> int:
    """The pause between requests to a domain: the strictest of the throttle's delay, robots.txt's
    Crawl-delay and the configured minimum (``DUALPLANE_LIMIT_DOMAIN_DELAY_MS``), which no
    command can undercut."""
    return max(throttle_delay_ms, crawl_delay_ms or 0, floor_ms)


def hold_s(delay_ms: int, jitter: float, rng: random.Random) -> float:
    """How long a permit is kept after a request: ``delay_ms`` times a random 1 to 1 + ``jitter``
    factor, so requests to a domain are never strictly periodic."""
    return delay_ms / 1000 * (1 + jitter * rng.random())


def release_in_s(started_s: float, now_s: float, hold_s: float, at_least_s: float = 0.0) -> float:
    """How long after ``now_s`` (the request's end) its permit goes back: ``hold_s`` after the
    request *started* (``started_s``), and ``at_least_s`` (a cooldown)
    after its end.

    Start to start, so a slot with a delay of D sends one request every D whatever the request and
    the fleet's own work around it cost (the task, the permit, the Kafka events: ~35 ms a request on
    a quiet machine, more under load). Held from the end, a rate set at 23.8/s sent ~14/s: the
    throttle's map from a rate to P_d and a delay (``data_plane.throttle.rates``) could not know that
    overhead. A request slower than its delay releases its permit at once, as Crawl-delay is read
    by most crawlers (the time between request starts)."""
    return max(at_least_s, started_s + hold_s - now_s, 0.0)


def permit_wait_s(base_s: float, delay_ms: int, concurrency: int, queued: int, jitter: float) -> float:
    """How long a task waits here for its domain's permit before it goes round a delay tier.

    At least ``base_s`` (``DUALPLANE_FETCH_PERMIT_WAIT_S``), and long enough for the ``queued``
    tasks of its domain already waiting here to have their turn at the domain's pace
    (``concurrency`` permits, each held ``delay_ms`` times 1 to 1 + ``jitter``): a throttled domain
    is slow on purpose, and deferring its tasks to a 5 s tier after a fixed wait starved it far
    below the rate the throttle allowed (1 request/s instead of 4.5 against a site allowing 5).
    Capped at a minute, so a domain that a command has slowed to a crawl lets its tasks go.
    """
    turn_s = (queued + 1) * delay_ms / 1000 * (1 + jitter / 2) / max(1, concurrency)
    return max(base_s, min(MAX_PERMIT_WAIT_S, turn_s))


def cooling_wait_s(cooling_s: float) -> float:
    """How much longer a task may wait for a domain that cools down for ``cooling_s`` more: past
    the cooldown, unless that is longer than :data:`MAX_PERMIT_WAIT_S` (then it goes round a tier).

    A Retry-After of 1 s used to outlast a task's permit wait, and every waiting task of the domain
    went round the 5 s tier: each block cost the domain 4 s of silence.
    """
    return cooling_s + 1.0 if cooling_s <= MAX_PERMIT_WAIT_S else 0.0


class DomainGate:
    """Requests held and cooldowns per domain in this process; see the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.held: Counter[str] = Counter()
        self.cooling_until: dict[str, float] = {}

    def check(self, domain: str, concurrency: int, paused: bool) -> Verdict:
        """May a task of ``domain`` start, under the domain's current ``concurrency`` and pause?"""
        if paused:
            return "defer"
        if self.cooling_s(domain) > 0 or self.held[domain] >= concurrency:
            return "wait"
        return "go"

    def acquired(self, domain: str) -> None:
        """A request to ``domain`` started (its permit is held from now on)."""
        self.held[domain] += 1

    def released(self, domain: str) -> None:
        """The request's permit went back; tolerant of a reset in between (see :meth:`reset`)."""
        if self.held[domain] > 1:
            self.held[domain] -= 1
        else:
            del self.held[domain]

    def cool(self, domain: str, seconds: float) -> None:
        """Start nothing for ``domain`` during the next ``seconds`` (extends, never shortens)."""
        until = self.clock() + seconds
        self.cooling_until[domain] = max(until, self.cooling_until.get(domain, -math.inf))

    def cooling_s(self, domain: str) -> float:
        """Seconds of cooldown left for ``domain`` (0 when none)."""
        until = self.cooling_until.get(domain)
        if until is None:
            return 0.0
        left = until - self.clock()
        if left <= 0:
            del self.cooling_until[domain]
            return 0.0
        return left

    def reset(self) -> None:
        """Forget held requests: the connection holding their permits is gone, and the broker
        returned them. Cooldowns stay, they are about the site, not the connection."""
        self.held.clear()


__all__ = [
    "DomainGate",
    "Verdict",
    "cooldown_s",
    "cooling_wait_s",
    "delay_ms",
    "hold_s",
    "permit_wait_s",
    "release_in_s",
]
