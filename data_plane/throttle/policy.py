"""Adaptive per-domain throttling as a pure function: window counts and state in, new state and command out.

The rules (AIMD with hysteresis), applied by :func:`decide` in this order:

1. **Paused** domains stay paused until ``pause_s`` has passed since the pause, then *resume* at
   concurrency 1 with their cooldown delay (the pause command itself carries ``ttl_s = pause_s``, so
   the fleet resumes on time even when no processor is running).
2. **Pause**: a blocked ratio of at least ``pause_ratio`` in ``pause_windows`` consecutive window
   verdicts pauses the domain.
3. **Halve**: a blocked ratio above ``threshold`` over at least ``min_samples`` fetches halves P_d
   (minimum 1) and sets a cooldown delay: ``cooldown_base_ms * 2^(k-1)`` for the k-th consecutive
   backoff, capped at ``cooldown_cap_ms``, scaled down by up to ``jitter``, never shorter than the
   base delay, the current delay or the largest Retry-After seen in the window.
4. **Limit**: P_d above the ceiling is brought down to it; when the daily request budget is at least
   ``budget_fraction`` used, the ceiling of low-priority domains is 1.
5. **Recover**: after ``recovery_s`` of unbroken healthy verdicts (blocked ratio at most
   ``threshold * recover_fraction``), P_d grows by 1 toward the ceiling; once it is there, the
   delay halves toward the base delay instead. Each further step needs another healthy period.

Probe backoff (as TCP's slow-start threshold): every tightening remembers the rate it happened at,
the *probe rate* (P_d per delay: a raised P_d and a halved delay are both steps up in rate, and
either can be the one the site refused). Climbing back below it takes ``recovery_s`` per step; the
step onto it is a probe, and its wait doubles with every failed probe (a tightening right after a
recovery): ``recovery_s * 2^failed``, the exponent capped at ``probe_backoff_max``. A probe that
holds for a whole wait redeems one failure and lifts the limit; reaching the ceiling and the base
delay forgets everything. Without it the limits saw-tooth around a site's limit at the pace of
``recovery_s`` and every tooth costs blocked requests (measured against the sample site's anti-bot
mode: 17% of the requests in the settled phase were blocked); with it the teeth grow apart.

Hysteresis: a decrease needs a ratio above ``threshold`` but a recovery needs one at or below
``threshold * recover_fraction``, and the healthy count restarts at every change, so a ratio
oscillating around the threshold can only ever tighten. At most one change happens per window step.

Verdicts (healthy, extreme) extend their streak at most once per window step, and any other verdict
with enough samples ends the streak at once, even within a step.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from core.settings import LimitSettings, ThrottleSettings

Priority = Literal["low", "normal"]


def domain_priority(domain: str, low_priority: tuple[str, ...]) -> Priority:
    """``low`` for a listed low-priority domain (``DUALPLANE_THROTTLE_LOW_PRIORITY_DOMAINS``) or any
    of its subdomains, else ``normal``."""
    for listed in low_priority:
        if domain == listed or domain.endswith(f".{listed}"):
            return "low"
    return "normal"


Action = Literal["halve", "pause", "resume", "recover", "budget", "ceiling"]
Verdict = Literal["extreme", "unhealthy", "band", "healthy", "none"]

INT32_MAX = 2**31 - 1  # delay_ms is an Avro int


@dataclass(frozen=True)
class WindowCounts:
    """Fetches of one domain in the window being judged."""

    total: int = 0
    blocked: int = 0
    timeouts: int = 0
    server_errors: int = 0
    max_retry_after_s: float | None = None

    @property
    def blocked_ratio(self) -> float:
        """Blocked share of ``total``; 0.0 for an empty window."""
        return self.blocked / self.total if self.total else 0.0


@dataclass(frozen=True)
class DomainState:
    """What the policy remembers about one domain between evaluations."""

    concurrency: int
    delay_ms: int
    paused: bool = False
    last_change_s: float | None = None
    healthy_windows: int = 0
    healthy_since_s: float | None = None  # when the current healthy streak began
    extreme_windows: int = 0
    verdict_step: int | None = None  # index (time // step) of the last step that got a verdict
    backoffs: int = 0  # consecutive cooldown level: the exponent of the next cooldown delay
    probing: bool = False  # the last change was a recovery: a tightening now means a failed probe
    failed_probes: int = 0  # failed probes not yet redeemed: the exponent of the probe's wait
    probe_rate: float | None = None  # rate() at the last tightening: climbing back onto it is a probe

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DomainState:
        """Inverse of :meth:`to_dict`; unknown keys (from a newer writer) are ignored."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


@dataclass(frozen=True)
class Budget:
    """The daily request budget and how much of it is used today."""

    daily_requests: int
    used: int

    @property
    def used_fraction(self) -> float:
        return self.used / self.daily_requests if self.daily_requests > 0 else 0.0


@dataclass(frozen=True)
class PolicyConfig:
    """Tuning of the policy; every duration is in event-time seconds.

    No defaults and no checks here: both live once, in ``DUALPLANE_THROTTLE_*``
    (:class:`~core.settings.ThrottleSettings`); build it with :meth:`from_settings`.
    """

    step_s: float
    threshold: float
    min_samples: int
    recovery_min_samples: int
    recover_fraction: float
    recovery_s: float
    ceiling: int
    base_delay_ms: int
    cooldown_base_ms: int
    cooldown_cap_ms: int
    jitter: float
    pause_ratio: float
    pause_windows: int
    pause_s: int
    budget_fraction: float
    probe_backoff_max: int  # the recovery wait grows to at most recovery_s * 2^this

    @classmethod
    def from_settings(cls, throttle: ThrottleSettings, limits: LimitSettings) -> PolicyConfig:
        """The policy's view of the settings: ``ceiling`` and ``base_delay_ms`` default to
        ``limits``' P_d and delay."""
        return cls(
            step_s=float(throttle.window_step_s),
            threshold=throttle.threshold,
            min_samples=throttle.min_samples,
            recovery_min_samples=throttle.recovery_min_samples,
            recover_fraction=throttle.recover_fraction,
            recovery_s=throttle.recovery_s,
            ceiling=throttle.ceiling if throttle.ceiling is not None else limits.domain_concurrency,
            base_delay_ms=throttle.base_delay_ms
            if throttle.base_delay_ms is not None
            else limits.domain_delay_ms,
            cooldown_base_ms=throttle.cooldown_base_ms,
            cooldown_cap_ms=throttle.cooldown_cap_ms,
            jitter=throttle.jitter,
            pause_ratio=throttle.pause_ratio,
            pause_windows=throttle.pause_windows,
            pause_s=throttle.pause_s,
            budget_fraction=throttle.budget_fraction,
            probe_backoff_max=throttle.probe_backoff_max,
        )

    def initial_state(self) -> DomainState:
        """The state of a domain never throttled: the ceiling and the base delay."""
        return DomainState(concurrency=self.ceiling, delay_ms=self.base_delay_ms)


@dataclass(frozen=True)
class Command:
    """A change of a domain's limits; ``reason`` starts with the action, for people and tests."""

    action: Action
    concurrency: int
    delay_ms: int
    paused: bool
    reason: str
    ttl_s: int | None = None


@dataclass(frozen=True)
class Decision:
    """The state to keep and the command to issue (``None``: the limits do not change)."""

    state: DomainState
    command: Command | None


def decide(
    counts: WindowCounts,
    state: DomainState,
    config: PolicyConfig,
    *,
    now_s: float,
    rng: random.Random,
    budget: Budget | None = None,
    priority: Priority = "normal",
) -> Decision:
    """Judge ``counts`` (the window ending at ``now_s``) against ``state``; see the module docstring.

    Pure: the only source of randomness is ``rng`` (the cooldown jitter), so equal inputs and an
    equally seeded ``rng`` give equal decisions.
    """
    state = _record_verdict(counts, state, config, now_s)
    if state.paused:
        return _resume(state, config, now_s)
    if not _can_change(state, config, now_s):
        return Decision(state, None)
    ceiling, budget_note = _effective_ceiling(config, budget, priority)
    decision = _pause(counts, state, config, now_s, rng) or _halve(counts, state, config, now_s, rng)
    if decision is None and state.concurrency > ceiling:
        decision = _limit(state, ceiling, budget_note, now_s)
    return decision or _recover(counts, state, config, now_s, ceiling) or Decision(state, None)


def classify(counts: WindowCounts, config: PolicyConfig) -> Verdict:
    """What a window says: ``none`` when it has too few fetches to say anything."""
    if counts.total >= config.min_samples:
        ratio = counts.blocked_ratio
        if ratio >= config.pause_ratio:
            return "extreme"
        if ratio > config.threshold:
            return "unhealthy"
        return "healthy" if ratio <= config.threshold * config.recover_fraction else "band"
    if counts.total >= config.recovery_min_samples and counts.blocked == 0:
        return "healthy"  # a throttled domain sees few fetches: a clean small window still counts
    return "none"


def cooldown_ms(level: int, retry_after_s: float | None, config: PolicyConfig, rng: random.Random) -> int:
    """Delay of the ``level``-th consecutive backoff: exponential, capped, jittered down, and never
    shorter than the base delay or ``retry_after_s``."""
    exponential = min(config.cooldown_cap_ms, config.cooldown_base_ms << min(max(level - 1, 0), 40))
    jittered = int(exponential * (1.0 - config.jitter * rng.random()))
    retry_after_ms = math.ceil(retry_after_s * 1000) if retry_after_s and retry_after_s > 0 else 0
    return min(INT32_MAX, max(config.base_delay_ms, jittered, retry_after_ms))


def _record_verdict(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float
) -> DomainState:
    """A good verdict counts once per step; a different verdict resets its streak at once."""
    verdict = classify(counts, config)
    if verdict == "none":
        return state
    step = _step(now_s, config)
    new_step = state.verdict_step is None or step > state.verdict_step

    def streak(current: int, holds: bool) -> int:
        if not holds:
            return 0
        return current + 1 if new_step or current == 0 else current

    healthy = streak(state.healthy_windows, verdict == "healthy")
    return replace(
        state,
        healthy_windows=healthy,
        healthy_since_s=None if healthy == 0 else state.healthy_since_s if state.healthy_windows else now_s,
        extreme_windows=streak(state.extreme_windows, verdict == "extreme"),
        verdict_step=step,
    )


def _resume(state: DomainState, config: PolicyConfig, now_s: float) -> Decision:
    if state.last_change_s is not None and now_s - state.last_change_s < config.pause_s:
        return Decision(state, None)
    resumed = _changed(state, now_s, paused=False, concurrency=1, extreme_windows=0)
    reason = (
        f"resume: pause of {config.pause_s} s is over; probing at concurrency 1, delay {state.delay_ms} ms"
    )
    return Decision(resumed, Command("resume", 1, resumed.delay_ms, False, reason))


def _pause(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, rng: random.Random
) -> Decision | None:
    if state.extreme_windows < config.pause_windows:
        return None
    level = state.backoffs + 1
    delay = max(state.delay_ms, cooldown_ms(level, counts.max_retry_after_s, config, rng))
    paused = _changed(
        state,
        now_s,
        paused=True,
        concurrency=1,
        delay_ms=delay,
        backoffs=level,
        **_probe_failed(state, config),
    )
    reason = (
        f"pause: blocked >= {config.pause_ratio:.0%} in {state.extreme_windows} consecutive windows "
        f"(now {_ratio_text(counts)}); paused for {config.pause_s} s, then concurrency 1, delay {delay} ms"
    )
    return Decision(paused, Command("pause", 1, delay, True, reason, ttl_s=config.pause_s))


def _halve(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, rng: random.Random
) -> Decision | None:
    if counts.total < config.min_samples or counts.blocked_ratio <= config.threshold:
        return None
    level = state.backoffs + 1
    concurrency = max(1, state.concurrency // 2)
    delay = max(state.delay_ms, cooldown_ms(level, counts.max_retry_after_s, config, rng))
    if concurrency == state.concurrency and delay == state.delay_ms:
        return Decision(replace(state, healthy_windows=0, healthy_since_s=None), None)  # at the floor already
    halved = _changed(
        state, now_s, concurrency=concurrency, delay_ms=delay, backoffs=level, **_probe_failed(state, config)
    )
    retry_after = f", Retry-After {counts.max_retry_after_s:g} s" if counts.max_retry_after_s else ""
    reason = (
        f"halve: {_ratio_text(counts)} (threshold {config.threshold:.1%}{retry_after}): "
        f"concurrency {state.concurrency} -> {concurrency}, delay {state.delay_ms} -> {delay} ms"
    )
    return Decision(halved, Command("halve", concurrency, delay, False, reason))


def _limit(state: DomainState, ceiling: int, budget_note: str | None, now_s: float) -> Decision:
    limited = _changed(state, now_s, concurrency=ceiling, probing=False)
    action: Action = "budget" if budget_note else "ceiling"
    why = budget_note or f"the configured ceiling is {ceiling}"
    reason = f"{action}: {why}: concurrency {state.concurrency} -> {ceiling}"
    return Decision(limited, Command(action, ceiling, state.delay_ms, False, reason))


def _recover(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, ceiling: int
) -> Decision | None:
    # One knob per step, P_d first: +1 slot adds one request per delay, an additive step in rate;
    # halving the delay doubles the rate, so it waits until P_d is back at the ceiling.
    concurrency, delay = min(ceiling, state.concurrency + 1), state.delay_ms
    if concurrency == state.concurrency:
        delay = max(config.base_delay_ms, state.delay_ms // 2)
    if concurrency == state.concurrency and delay == state.delay_ms:
        return None
    wait_s = recovery_wait_s(state, config, concurrency, delay)
    if state.healthy_since_s is None or now_s - state.healthy_since_s < wait_s:
        return None
    failed, limit = state.failed_probes, state.probe_rate
    if limit is not None and rate(state.concurrency, state.delay_ms) >= limit:
        failed, limit = max(0, failed - 1), None  # held on the limit for a whole wait: it moved
    if concurrency == ceiling and delay == config.base_delay_ms:
        failed, limit = 0, None
    recovered = _changed(
        state,
        now_s,
        concurrency=concurrency,
        delay_ms=delay,
        backoffs=max(0, state.backoffs - 1),
        probing=True,
        failed_probes=failed,
        probe_rate=limit,
    )
    reason = (
        f"recover: healthy for {now_s - state.healthy_since_s:.0f} s, {state.healthy_windows} windows "
        f"(now {_ratio_text(counts)}): "
        f"concurrency {state.concurrency} -> {concurrency}, delay {state.delay_ms} -> {delay} ms"
    )
    return Decision(recovered, Command("recover", concurrency, delay, False, reason))


def rate(concurrency: int, delay_ms: int) -> float:
    """Requests per second a domain's limits allow, up to latency: what orders the recovery steps."""
    return concurrency * 1000 / max(delay_ms, 1)


def recovery_wait_s(state: DomainState, config: PolicyConfig, concurrency: int, delay_ms: int) -> float:
    """The healthy period before a recovery to ``concurrency`` and ``delay_ms``: longer for the step
    onto the probe rate."""
    limit = state.probe_rate
    if limit is None or not rate(state.concurrency, state.delay_ms) < limit <= rate(concurrency, delay_ms):
        return config.recovery_s
    return config.recovery_s * float(2 ** min(state.failed_probes, config.probe_backoff_max))


def _probe_failed(state: DomainState, config: PolicyConfig) -> dict[str, Any]:
    """State changes of a tightening: it sets the probe limit, and fails the probe if it undoes one."""
    failed = state.failed_probes + 1 if state.probing else state.failed_probes
    return {
        "probing": False,
        "failed_probes": min(failed, config.probe_backoff_max),
        "probe_rate": rate(state.concurrency, state.delay_ms),
    }


def _effective_ceiling(
    config: PolicyConfig, budget: Budget | None, priority: Priority
) -> tuple[int, str | None]:
    if budget is None or priority != "low" or budget.used_fraction < config.budget_fraction:
        return config.ceiling, None
    note = (
        f"daily request budget {budget.used_fraction:.0%} used ({budget.used} of {budget.daily_requests}); "
        "low-priority domain limited to concurrency 1"
    )
    return 1, note


def _changed(state: DomainState, now_s: float, **changes: Any) -> DomainState:
    """``state`` with ``changes`` made at ``now_s``: a change restarts the healthy streak."""
    return replace(state, last_change_s=now_s, healthy_windows=0, healthy_since_s=None, **changes)


def _can_change(state: DomainState, config: PolicyConfig, now_s: float) -> bool:
    """At most one change per window step."""
    return state.last_change_s is None or _step(now_s, config) > _step(state.last_change_s, config)


def _step(time_s: float, config: PolicyConfig) -> int:
    return math.floor(time_s / config.step_s)


def _ratio_text(counts: WindowCounts) -> str:
    return f"blocked {counts.blocked_ratio:.1%} of {counts.total} fetches"
