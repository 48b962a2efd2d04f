"""A simulated fleet against a rate-limited site, driven by the real throttle policy (pure logic).

Event-driven and deterministic for a seed: P_d slots send requests to one site that lets at most
``max_rps`` requests through in any second (blocked ones count too, as the sample site's anti-bot
gate does); each slot holds its permit for the delay times 1 to 1 + ``jitter`` from the request's
start, and at least for the answer plus the fleet's own ``overhead_ms``, as a fetcher does; a blocked
answer makes the fetcher leave the site alone for the cooldown of its outcome (a 403 burst's
``cooldown_base_ms``, a captcha's or a 429's ``challenge_cooldown_ms``, as
``ThrottleSettings.cooldown_without_retry_after_ms`` chooses; Retry-After first). Every
answer is a fetch event the policy judges on the processor's windows (step buckets, the window
after the last change), and a command reaches the fleet ``reaction_s`` later.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from dualplane.core.limits import cooldown_s
from dualplane.core.settings import ThrottleSettings
from dualplane.data_plane.throttle.events import FetchSample
from dualplane.data_plane.throttle.policy import PolicyConfig, decide
from dualplane.data_plane.throttle.signals import WindowCounts
from dualplane.data_plane.throttle.windows import add_sample, counts_of, merged, span_s, window_to_judge


@dataclass
class SimSite:
    max_rps: float
    relax_at_s: float
    retry_after_s: float | None = 1.0  # None: a captcha page, no Retry-After
    latency_ms: float = 5.0
    slow_from_s: float | None = None  # latency rises tenfold from then on
    forbidden: tuple[float, float] | None = None  # a 403 burst: every request refused in [start, end)
    arrivals: deque[float] = field(default_factory=deque)

    def outcome(self, now_s: float) -> str:
        """What a blocked request arriving at ``now_s`` was answered, as the fetcher classifies it."""
        if self.forbidden is not None and self.forbidden[0] <= now_s < self.forbidden[1]:
            return "forbidden"
        return "rate_limited" if self.retry_after_s is not None else "blocked_challenge"

    def answer(self, now_s: float) -> tuple[bool, float]:
        """(blocked, latency_ms) of a request arriving at ``now_s``."""
        latency = self.latency_ms * (10 if self.slow_from_s is not None and now_s >= self.slow_from_s else 1)
        if self.forbidden is not None and self.forbidden[0] <= now_s < self.forbidden[1]:
            return True, latency
        if now_s >= self.relax_at_s:
            return False, latency
        self.arrivals.append(now_s)
        while self.arrivals[0] <= now_s - 1.0:
            self.arrivals.popleft()
        return len(self.arrivals) > self.max_rps, latency


@dataclass
class SimSecond:
    t_s: int
    requests: int = 0
    blocked: int = 0
    concurrency: int = 0
    delay_ms: int = 0


@dataclass
class SimResult:
    seconds: list[SimSecond]
    commands: list[tuple[float, str]]

    def between(self, start_s: float, end_s: float) -> list[SimSecond]:
        return [s for s in self.seconds if start_s <= s.t_s < end_s]


def simulate(
    site: SimSite,
    config: PolicyConfig,
    *,
    duration_s: float,
    window_s: float,
    jitter: float = 0.2,
    overhead_ms: float = 3.0,
    reaction_s: float = 0.05,
    seed: int = 1,
    challenge_cooldown_ms: int | None = None,
) -> SimResult:
    """Run the fleet against ``site`` for ``duration_s``; every second's figures and every command.
    ``challenge_cooldown_ms``: the cooldown after a captcha or a 429 without Retry-After, None: the
    shipped ``DUALPLANE_THROTTLE_COOLDOWN_CHALLENGE_MS``."""
    cooldowns = ThrottleSettings.model_construct(
        cooldown_base_ms=config.cooldown_base_ms,
        cooldown_challenge_ms=challenge_cooldown_ms
        or ThrottleSettings.model_fields["cooldown_challenge_ms"].default,
    )
    fleet = _Fleet(site, config, window_s, jitter, overhead_ms, reaction_s, random.Random(seed))
    fleet.cooldowns = cooldowns
    fleet.seconds = [SimSecond(t) for t in range(int(duration_s) + 1)]
    fleet.push(0.0, "try")
    while fleet.events:
        now, _, kind, payload = heapq.heappop(fleet.events)
        if now >= duration_s:
            break
        getattr(fleet, f"on_{kind}")(now, payload)
    for second in fleet.seconds:  # the limits at the end of each second, as the loop's samples show
        second.concurrency, second.delay_ms = [lim for at, lim in fleet.applied if at < second.t_s + 1][-1]
    return SimResult(fleet.seconds, fleet.commands)


class _Fleet:
    def __init__(  # noqa: PLR0917 (one private call site, spelled out)
        self,
        site: SimSite,
        config: PolicyConfig,
        window_s: float,
        jitter: float,
        overhead_ms: float,
        reaction_s: float,
        rng: random.Random,
    ) -> None:
        self.site, self.config, self.window_s, self.rng = site, config, window_s, rng
        self.jitter, self.overhead_s, self.reaction_s = jitter, overhead_ms / 1000, reaction_s
        self.state = config.initial_state()
        self.limits = (self.state.concurrency, self.state.delay_ms)
        self.applied: list[tuple[float, tuple[int, int]]] = [(0.0, self.limits)]
        self.buckets: dict[int, dict[str, Any]] = {}
        self.slow_buckets: dict[int, dict[str, Any]] = {}
        self.offset = 0
        self.seconds: list[SimSecond] = []
        self.commands: list[tuple[float, str]] = []
        self.cooling_until = 0.0
        self.in_use = 0
        self.events: list[tuple[float, int, str, Any]] = []
        self.seq = 0
        self.cooldowns = ThrottleSettings.model_construct()

    def push(self, at: float, kind: str, payload: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, self.seq, kind, payload))

    def on_limits(self, now: float, limits: tuple[int, int]) -> None:
        self.limits = limits
        self.applied.append((now, limits))
        self.push(now, "try")

    def on_try(self, now: float, _: Any) -> None:
        if now < self.cooling_until:
            self.push(self.cooling_until, "try")
            return
        while self.in_use < self.limits[0]:
            self.in_use += 1
            blocked, latency_ms = self.site.answer(now)
            second = self.seconds[int(now)]
            second.requests += 1
            second.blocked += blocked
            outcome = self.site.outcome(now) if blocked else "ok"
            self.push(now + latency_ms / 1000, "answer", (blocked, latency_ms, now, outcome))

    def on_release(self, now: float, _: Any) -> None:
        self.in_use -= 1
        self.push(now, "try")

    def on_answer(self, now: float, answer: tuple[bool, float, float, str]) -> None:
        blocked, latency_ms, started, outcome = answer
        paced = started + self.limits[1] / 1000 * (1 + self.jitter * self.rng.random())  # start to start
        hold_s = max(paced - now, self.overhead_s)
        if blocked:  # the fetcher that saw it leaves the site alone, as politeness does
            base_ms = self.cooldowns.cooldown_without_retry_after_ms(outcome)
            cool = cooldown_s(self.site.retry_after_s, base_ms, self.config.cooldown_cap_ms)
            self.cooling_until = max(self.cooling_until, now + cool)
            hold_s = max(hold_s, cool)
        self.push(now + hold_s, "release")
        self._count(now, blocked, latency_ms)
        config, state = self.config, self.state
        counts = _counts(self.buckets, now, self.window_s, config.step_s, state.last_change_s)
        slow = None
        if config.slow_window_s > 0:  # the slow layer, as the processor judges it
            slow = _counts(self.slow_buckets, now, config.slow_window_s, config.slow_step_s, state.backoff_s)
        decision = decide(counts, state, config, now_s=now, rng=self.rng, slow=slow)
        self.state = decision.state
        if decision.command is not None:
            self.commands.append((now, decision.command.reason))
            command = decision.command
            self.push(now + self.reaction_s, "limits", (command.concurrency, command.delay_ms))

    def _count(self, now: float, blocked: bool, latency_ms: float) -> None:
        # The processor's own bucket values (windows.add_sample), so spans and peaks are measured alike.
        retry_after = self.site.retry_after_s if blocked else None
        outcome = "rate_limited" if blocked else "ok"
        sample = FetchSample("sim.test", outcome, now, round(latency_ms), retry_after)
        self.offset += 1
        for buckets, step_s in (
            (self.buckets, self.config.step_s),
            (self.slow_buckets, self.config.slow_step_s),
        ):
            if step_s > 0:
                bucket = math.floor(now / step_s)
                buckets[bucket] = add_sample(buckets.get(bucket, {}), sample, 0, self.offset)


def _counts(
    buckets: dict[int, dict[str, Any]],
    now: float,
    window_s: float,
    step_s: float,
    since_s: float | None,
) -> WindowCounts:
    window = window_to_judge(now, window_s, step_s, since_s)
    if window is None:
        return WindowCounts()
    first = round(window[0] / step_s)
    value = merged(buckets.get(first + i, {}) for i in range(round(window_s / step_s)))
    return counts_of(value, span_s(window, now, step_s, value.get("first_s"), since_s), step_s)
