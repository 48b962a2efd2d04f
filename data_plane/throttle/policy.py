"""Adaptive per-domain throttling as a pure function: window counts and state in, new state and command out.

The policy controls a domain's **request rate** (requests/s), which it hands to the fleet as a
concurrency P_d and a delay (:mod:`data_plane.throttle.rates`). It looks for the highest rate the
site takes without pushing back, and holds there. The rules, applied by :func:`decide` in this order:

1. **Paused** domains stay paused until ``pause_s`` has passed, then *resume* at concurrency 1.
2. **Pause**: a pushback ratio of at least ``pause_ratio`` in ``pause_windows`` consecutive window
   verdicts pauses the domain (``ttl_s = pause_s``, so the fleet resumes even without a processor).
3. **Failed probe**: any block after a step up undoes it at once (back to the rate that held), and
   remembers the refused rate as the site's limit for now.
4. **Back off**: a pushback ratio above ``threshold`` over ``min_samples`` fetches sets the rate to
   ``BACKOFF`` (90%) of what the site *let through* (the window's pass rate, or its busiest blocked
   step's), never above 90% of the current rate and, once throttled, never below half of it.
   Against a rate limit that is one step to just under it, where halving P_d settled at ~40% of
   the limit. The rate that was set when the blocks
   came is the site's limit from then on (a new domain's first backoff knows none yet: it climbs
   by doubling until the next one). The first step after a change is not judged again.
5. **Slow down** (latency, like Scrapy's AutoThrottle): a window whose mean latency is over
   ``latency_factor`` times the domain's own baseline (and ``latency_min_ms`` above it) cuts the
   rate by a quarter before the site starts blocking.
6. **Limit**: P_d above the ceiling (or 1 for a low-priority domain past ``budget_fraction`` of the
   daily budget) is brought down to it.
7. **Climb**, after an unbroken healthy period (pushback at most ``threshold * recover_fraction``):
   back to the last rate that held in one step (``step_s``); with no known limit, double after
   ``recovery_s``;
   below a known limit, every ``recovery_s`` a step of 10%, 20%, 40%... but at most halfway to it
   (a bisection of a stale limit cost a block per halving); onto the limit itself, a probe of
   ``PROBE_STEP`` above it, whose wait doubles with every failed probe (``recovery_s * 2^failed``,
   the exponent capped at ``probe_backoff_max``). A probe that holds for ``recovery_s`` means the
   site relaxed: the limit is forgotten and the rate grows x1.5, then doubles every step back to the
   unthrottled P_d and delay. No climb before the cooldown of the last Retry-After
   (:func:`core.limits.cooldown_s`, the same rule the fetchers follow) is over.

Pushback is weighted (:data:`data_plane.throttle.signals.SIGNAL_WEIGHTS`): a 429, a 403, a captcha
page and a 503 each count as one block; a connection reset as half; another 5xx or a timeout as a
quarter.

Hysteresis: a decrease needs a ratio above ``threshold``, a climb one at or below
``threshold * recover_fraction``, and the healthy streak restarts at every change. At most one change
per window step, except that a failed probe is undone as soon as its window shows a block.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from dualplane.core.limits import cooldown_s
from dualplane.core.settings import FetchSettings, LimitSettings, ThrottleSettings
from dualplane.data_plane.throttle.rates import Pace
from dualplane.data_plane.throttle.signals import WindowCounts

Priority = Literal["low", "normal"]
Action = Literal["backoff", "nudge", "probe_failed", "slow", "pause", "resume", "climb", "budget", "ceiling"]
Verdict = Literal["extreme", "unhealthy", "band", "healthy", "none"]

BACKOFF = 0.9  # of the pass rate: just under what the site let through
HALVE = 0.5  # the deepest cut of an already throttled rate in one backoff (the seed's rule)
NUDGE = 0.95  # of the rate, after a lone block: the rate is just over the limit, not far
LONE_PUSHBACK = 1.0  # at most this much pushback in a window is a nudge, not a backoff
LATENCY_BACKOFF = 0.75
PROBE_STEP = 0.05  # a probe asks this much above the refused rate, or the rate that held
RELAXED = "the site relaxed"
RELAXED_STEP = 2.0  # the first step up after a probe above the limit held
RELAXED_CLIMB = 4.0  # the steps after it: back to the configured limits in seconds
PROBE_REQUESTS = 70  # failed probes come at least this many requests apart
MIN_RATE_RPS = 1 / 600  # one request every 10 min: a backoff never goes below it


def domain_priority(domain: str, low_priority: tuple[str, ...]) -> Priority:
    """``low`` for a listed low-priority domain (``DUALPLANE_THROTTLE_LOW_PRIORITY_DOMAINS``) or any
    of its subdomains, else ``normal``."""
    for listed in low_priority:
        if domain == listed or domain.endswith(f".{listed}"):
            return "low"
    return "normal"


@dataclass(frozen=True)
class DomainState:
    """What the policy remembers about one domain between evaluations (durable: see ``to_dict``)."""

    concurrency: int
    delay_ms: int
    paused: bool = False
    last_change_s: float | None = None
    healthy_windows: int = 0
    healthy_since_s: float | None = None  # when the current healthy streak began
    extreme_windows: int = 0
    verdict_step: int | None = None  # index (time // step) of the last step that got a verdict
    rate_rps: float | None = None  # the rate the limits were set for; None: unthrottled
    good_rps: float | None = None  # the highest rate that held since the last backoff
    limit_rps: float | None = None  # the lowest rate refused since: the site's limit, as far as known
    probing: bool = False  # the last change was a climb: a block now undoes it
    held_rps: float | None = None  # the rate before the last climb, where a failed one goes back to
    failed_probes: int = 0  # the exponent of the wait before the next probe onto the limit
    climbs: int = 0  # climbs in a row below the limit since the last decrease: they grow 10%, 20%, 40%...
    latency_ms: float | None = None  # the domain's own baseline latency
    hold_until_s: float | None = None  # no climbing before (Retry-After's cooldown)
    reverted: bool = False  # the last change undid a failed probe: its echoes are no new signal
    last_block_s: float | None = None  # the last change for a block: probes come a budget of requests after
    relaxed: bool = False  # climbing back after a probe over the limit held: in bigger steps
    # The slow layer's memory: when the rate was last cut for blocks (its window starts after it),
    # the step of its last verdict, and whether its window is over the threshold (a hot domain).
    backoff_s: float | None = None
    slow_verdict_step: int | None = None
    hot: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DomainState:
        """Inverse of :meth:`to_dict`; unknown keys (from an older or newer writer) are ignored."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


@dataclass(frozen=True)
class Budget:
    """The daily budget and how much of it is used today: requests, or the scraping API's credits."""

    daily_requests: float  # the budget, in ``unit``
    used: float
    unit: Literal["request", "credit"] = "request"

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
    jitter: float  # spread of the probe waits, so domains throttled together do not probe in step
    pause_ratio: float
    pause_windows: int
    pause_s: int
    budget_fraction: float
    probe_backoff_max: int  # the probe wait grows to at most recovery_s * 2^this
    latency_factor: float  # 0: latency is no signal
    latency_min_ms: float
    window_s: float = 0.0  # the judged window's size: a nudge waits for it to slide past a change
    hold_jitter: float = 0.0  # the fleet's DUALPLANE_FETCH_DELAY_JITTER, for the rate <-> limits map
    # The slow layer (the seed's 10-minute window) when the fast one judges the rest; 0: none.
    slow_window_s: float = 0.0
    slow_step_s: float = 0.0
    slow_min_samples: int = 0

    @classmethod
    def from_settings(
        cls, throttle: ThrottleSettings, limits: LimitSettings, fetch: FetchSettings | None = None
    ) -> PolicyConfig:
        """The policy's view of the settings: ``ceiling`` and ``base_delay_ms`` default to
        ``limits``' P_d and delay; ``fetch`` gives the hold jitter the fleet applies. With a fast
        layer, its window is the one judged step by step and the 10-minute one is the slow layer."""
        fast = throttle.fast_layer
        return cls(
            step_s=float(throttle.fast_step_s if fast else throttle.window_step_s),
            window_s=float(throttle.fast_window_s if fast else throttle.window_size_s),
            slow_window_s=float(throttle.window_size_s) if fast else 0.0,
            slow_step_s=float(throttle.window_step_s) if fast else 0.0,
            slow_min_samples=throttle.min_samples if fast else 0,
            threshold=throttle.threshold,
            min_samples=throttle.fast_min_samples if fast else throttle.min_samples,
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
            latency_factor=throttle.latency_factor,
            latency_min_ms=throttle.latency_min_ms,
            hold_jitter=fetch.delay_jitter if fetch is not None else 0.0,
        )

    def initial_state(self) -> DomainState:
        """The state of a domain never throttled: the ceiling and the base delay."""
        return DomainState(concurrency=self.ceiling, delay_ms=self.base_delay_ms)

    def pace(self, latency_ms: float | None) -> Pace:
        return Pace(latency_ms or 0.0, self.hold_jitter)


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
    slow: WindowCounts | None = None,
) -> Decision:
    """Judge ``counts`` (the window ending at ``now_s``) against ``state``; see the module docstring.

    ``slow`` is the slow layer's window (the 10-minute one since the last backoff) when ``counts``
    is the fast layer's: then the pause and the seed's rule are judged on it, the rest on ``counts``.
    Pure: the only source of randomness is ``rng`` (the spread of probe waits), so equal inputs and
    an equally seeded ``rng`` give equal decisions.
    """
    state = _record_verdict(counts, state, config, now_s, extremes=slow is None)
    if slow is not None:
        state = _record_slow(slow, state, config, now_s)
    if state.paused:
        return _resume(state, config, now_s)
    failed = _failed_probe(counts, state, config, now_s)
    if failed is not None:
        return failed
    if not _can_change(state, config, now_s):
        return Decision(state, None)
    ceiling, budget_note = _effective_ceiling(config, budget, priority)
    decision = (
        _pause(slow or counts, state, config, now_s)
        or _back_off(counts, state, config, now_s, ceiling)
        or (_seed_rule(slow, state, config, now_s, ceiling) if slow is not None else None)
        or _nudge(counts, state, config, now_s, ceiling)
        or _slow_down(counts, state, config, now_s, ceiling)
    )
    if decision is None and state.concurrency > ceiling:
        decision = _limit(state, ceiling, budget_note, now_s)
    return (
        decision
        or _climb(counts, state, config, now_s=now_s, ceiling=ceiling, rng=rng)
        or Decision(state, None)
    )


def classify(counts: WindowCounts, config: PolicyConfig) -> Verdict:
    """What a window says: ``none`` when it has too few fetches to say anything."""
    if counts.total >= config.min_samples:
        ratio = counts.pushback_ratio
        if ratio >= config.pause_ratio:
            return "extreme"
        if ratio > config.threshold:
            return "unhealthy"
        return "healthy" if ratio <= config.threshold * config.recover_fraction else "band"
    if counts.total >= config.recovery_min_samples and counts.pushback == 0:
        return "healthy"  # a throttled domain sees few fetches: a clean small window still counts
    return "none"


def current_rate(state: DomainState, config: PolicyConfig, latency_ms: float | None = None) -> float:
    """The rate ``state``'s limits send at: the one they were set for, else what they allow."""
    if state.rate_rps is not None:
        return state.rate_rps
    return config.pace(latency_ms or state.latency_ms).rate(state.concurrency, state.delay_ms)


def _record_verdict(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, *, extremes: bool = True
) -> DomainState:
    """A good verdict counts once per step; a different verdict resets its streak at once. A clean
    window's latency feeds the baseline, once per step."""
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
    baseline = state.latency_ms
    if new_step and verdict == "healthy" and not _latency_high(counts, state, config):
        baseline = _learn_latency(baseline, counts.latency_ms)
    return replace(
        state,
        healthy_windows=healthy,
        healthy_since_s=None if healthy == 0 else state.healthy_since_s if state.healthy_windows else now_s,
        extreme_windows=streak(state.extreme_windows, verdict == "extreme")
        if extremes
        else state.extreme_windows,
        verdict_step=step,
        latency_ms=baseline,
    )


def _record_slow(slow: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float) -> DomainState:
    """The slow window's verdict, once per slow step: the extreme streak (the pause) and ``hot``."""
    if slow.total < config.slow_min_samples:
        return state
    step = math.floor(now_s / config.slow_step_s)
    ratio = slow.pushback_ratio
    extreme = ratio >= config.pause_ratio
    if state.slow_verdict_step is None or step > state.slow_verdict_step:
        streak = state.extreme_windows + 1 if extreme else 0
    else:
        streak = state.extreme_windows if extreme else 0
    return replace(state, extreme_windows=streak, slow_verdict_step=step, hot=ratio > config.threshold)


def _seed_rule(
    slow: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, ceiling: int
) -> Decision | None:
    """The seed's rule, the fast layer's backstop: pushback above ``threshold`` over the slow window
    since the last backoff (and at least a slow step of it) halves the rate. The fast layer's
    backoffs keep a window clean, so this acts only on what they missed: blocks too sparse for a
    fast window, or probes failing over and over."""
    if slow.total < config.slow_min_samples or slow.pushback_ratio <= config.threshold:
        return None
    if slow.span_s < config.slow_step_s:
        return None  # a few seconds of a window just opened are the fast layer's to judge
    current = current_rate(state, config, slow.latency_ms)
    rate = max(MIN_RATE_RPS, current / 2)
    why = (
        f"the {config.slow_window_s / 60:g}-minute rule: {_ratio_text(slow)} over {slow.span_s:.0f} s "
        f"(threshold {config.threshold:.1%}), halved from {current:.2f} requests/s"
    )
    return _set_rate(
        state, config, now_s=now_s, ceiling=ceiling, rate=rate, action="backoff", why=why,
        latency_ms=slow.latency_ms, backoff_s=now_s,
        **_tightened(slow, state, config, now_s, refused=current),
    )  # fmt: skip


def _learn_latency(baseline: float | None, latency_ms: float | None) -> float | None:
    if latency_ms is None:
        return baseline
    return latency_ms if baseline is None else round(0.8 * baseline + 0.2 * latency_ms, 1)


def _latency_high(counts: WindowCounts, state: DomainState, config: PolicyConfig) -> bool:
    latency, baseline = counts.latency_ms, state.latency_ms
    if config.latency_factor <= 0 or latency is None or baseline is None:
        return False
    return latency > config.latency_factor * baseline and latency - baseline >= config.latency_min_ms


def _resume(state: DomainState, config: PolicyConfig, now_s: float) -> Decision:
    if state.last_change_s is not None and now_s - state.last_change_s < config.pause_s:
        return Decision(state, None)
    resumed = _changed(state, now_s, paused=False, concurrency=1, extreme_windows=0)
    reason = (
        f"resume: pause of {config.pause_s} s is over; probing at concurrency 1, delay {state.delay_ms} ms"
    )
    return Decision(resumed, Command("resume", 1, resumed.delay_ms, False, reason))


def _pause(counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float) -> Decision | None:
    if state.extreme_windows < config.pause_windows:
        return None
    rate = _backoff_rate(counts, state, config)
    _, delay = config.pace(counts.latency_ms).limits(rate, 1, config.base_delay_ms)
    delay = max(delay, state.delay_ms)
    tightened = _tightened(counts, state, config, now_s)
    paused = _changed(
        state, now_s, paused=True, concurrency=1, delay_ms=delay, rate_rps=rate, backoff_s=now_s, **tightened
    )
    reason = (
        f"pause: pushback >= {config.pause_ratio:.0%} in {state.extreme_windows} consecutive windows "
        f"(now {_ratio_text(counts)}); paused for {config.pause_s} s, then concurrency 1, delay {delay} ms"
    )
    return Decision(paused, Command("pause", 1, delay, True, reason, ttl_s=config.pause_s))


def _failed_probe(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float
) -> Decision | None:
    """A block right after a climb: back to the rate that held, at once, even within the step."""
    if not state.probing or counts.blocked + counts.overloaded == 0 or state.held_rps is None:
        return None
    refused, back = current_rate(state, config), state.held_rps
    pace = config.pace(state.latency_ms)
    concurrency, delay = pace.limits(back, state.concurrency, config.base_delay_ms)
    failed = min(state.failed_probes + 1, config.probe_backoff_max)
    reverted = _changed(
        state,
        now_s,
        concurrency=concurrency,
        delay_ms=delay,
        rate_rps=back,
        good_rps=min(state.good_rps or back, back),
        limit_rps=min(refused, state.limit_rps or refused),
        probing=False,
        failed_probes=failed,
        climbs=0,
        hold_until_s=_hold_until(counts, config, now_s, state.hold_until_s),
        reverted=True,
        last_block_s=now_s,
    )
    reason = (
        f"probe_failed: {_ratio_text(counts)} at {refused:.2f} requests/s: back to {back:.2f}/s, "
        f"concurrency {state.concurrency} -> {concurrency}, delay {state.delay_ms} -> {delay} ms; "
        f"next probe in {_probe_wait_s(failed, back, config):.0f} s"
    )
    return Decision(reverted, Command("probe_failed", concurrency, delay, False, reason))


def _back_off(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, ceiling: int
) -> Decision | None:
    if counts.total < config.min_samples or counts.pushback_ratio <= config.threshold:
        return None
    if state.rate_rps is not None and counts.pushback <= LONE_PUSHBACK:
        return None  # a lone block at a rate that held: a nudge, not a backoff
    if state.reverted and _in_echo(state, config, now_s):
        return None  # the failed probe's last answers, and the site still counting its requests
    if state.rate_rps is not None and _steps_since_change(state, config, now_s) < 2:
        # The first step after a change still holds answers to requests sent before it: judging
        # them again cut a rate just set to 90% of the limit to 40% of it. Counted in time, not in
        # the window's span: that runs from the domain's first fetch, and a burst is a second long.
        return None
    rate = _backoff_rate(counts, state, config)
    threshold = f"threshold {config.threshold:.1%}{_retry_after_text(counts)}"
    why = f"{_ratio_text(counts)} ({threshold}), {_pass_text(counts)}"
    return _set_rate(
        state, config, now_s=now_s, ceiling=ceiling, rate=rate, action="backoff", why=why,
        latency_ms=counts.latency_ms, backoff_s=now_s,
        **_tightened(counts, state, config, now_s),
    )  # fmt: skip


def _nudge(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, ceiling: int
) -> Decision | None:
    """A block too few for a backoff, at a throttled rate: a little lower, and that rate is the limit."""
    if state.rate_rps is None or counts.blocked + counts.overloaded == 0:
        return None
    if counts.pushback > LONE_PUSHBACK and counts.pushback_ratio > config.threshold:
        return None  # a backoff's, when its window is judged
    if _in_echo(state, config, now_s):
        return None
    current = current_rate(state, config)
    why = f"{_ratio_text(counts)} at {current:.2f} requests/s, under the threshold {config.threshold:.1%}"
    return _set_rate(
        state, config, now_s=now_s, ceiling=ceiling, rate=NUDGE * current, action="nudge", why=why,
        latency_ms=counts.latency_ms,
        **_tightened(counts, state, config, now_s, refused=min(current, state.limit_rps or current)),
    )  # fmt: skip


def _in_echo(state: DomainState, config: PolicyConfig, now_s: float) -> bool:
    """Until the window has slid past the last change, its first step may hold answers to requests
    sent before it (a failed probe's second block, a burst the site still counts)."""
    if state.last_change_s is None:
        return False
    return now_s - state.last_change_s < max(config.window_s + config.step_s, 2 * config.step_s)


def _slow_down(
    counts: WindowCounts, state: DomainState, config: PolicyConfig, now_s: float, ceiling: int
) -> Decision | None:
    if counts.total < config.min_samples or not _latency_high(counts, state, config):
        return None
    sent = min(current_rate(state, config), counts.rate_rps or math.inf)
    rate = max(MIN_RATE_RPS, LATENCY_BACKOFF * sent)
    why = (
        f"latency {counts.latency_ms:.0f} ms is over {config.latency_factor:g}x "
        f"its baseline {state.latency_ms:.0f} ms"
    )
    return _set_rate(
        state, config, now_s=now_s, ceiling=ceiling, rate=rate, action="slow", why=why,
        latency_ms=counts.latency_ms,
        **_tightened(counts, state, config, now_s, refused=sent),
    )  # fmt: skip


def _limit(state: DomainState, ceiling: int, budget_note: str | None, now_s: float) -> Decision:
    limited = _changed(state, now_s, concurrency=ceiling, probing=False, rate_rps=None)
    action: Action = "budget" if budget_note else "ceiling"
    why = budget_note or f"the configured ceiling is {ceiling}"
    reason = f"{action}: {why}: concurrency {state.concurrency} -> {ceiling}"
    return Decision(limited, Command(action, ceiling, state.delay_ms, False, reason))


def _climb(
    counts: WindowCounts,
    state: DomainState,
    config: PolicyConfig,
    *,
    now_s: float,
    ceiling: int,
    rng: random.Random,
) -> Decision | None:
    rate = state.rate_rps
    if rate is None and (state.concurrency, state.delay_ms) != (ceiling, config.base_delay_ms):
        rate = current_rate(state, config)  # under a lower ceiling before (the budget): climb again
    if rate is None or state.healthy_since_s is None:
        return None
    if state.hold_until_s is not None and now_s < state.hold_until_s:
        return None
    good, limit = max(state.good_rps or 0.0, rate), state.limit_rps
    target, wait_s, block_wait_s, kind = _next_step(rate, state, config)
    if kind == "probe":
        block_wait_s *= 1 + config.jitter * (rng.random() - 0.5)
    # The block budget counts from the last block, not from the last change: a climb that held
    # cost nothing, and the probe after it need not wait for a whole probe period again.
    last_block_s = state.last_block_s if state.last_block_s is not None else state.healthy_since_s
    if now_s - state.healthy_since_s < wait_s or now_s - last_block_s < block_wait_s:
        return None
    failed = state.failed_probes
    relaxed = state.relaxed and limit is None
    if kind == RELAXED:
        limit, failed, relaxed = None, 0, True  # held on the refused rate for a whole wait: the site relaxed
    held = now_s - state.healthy_since_s
    why = f"healthy for {held:.0f} s (now {_ratio_text(counts)}), {kind} from {rate:.2f} requests/s"
    return _set_rate(
        state, config, now_s=now_s, ceiling=ceiling, rate=target, action="climb", why=why,
        good_rps=good, held_rps=rate, limit_rps=limit, failed_probes=failed, probing=True,
        climbs=min(state.climbs + 1, 8), relaxed=relaxed,
    )  # fmt: skip


def _next_step(rate: float, state: DomainState, config: PolicyConfig) -> tuple[float, float, float, str]:
    """Where the next climb goes, the healthy period it needs first, the time since the last block
    it needs (the block budget), and what kind of step it is."""
    good, limit = state.good_rps, state.limit_rps
    if good is not None and rate < good:
        return min(good, 2 * rate), config.step_s, 0.0, "back to the rate that held"
    if limit is None and state.relaxed:
        return RELAXED_CLIMB * rate, config.step_s, 0.0, "after the site relaxed"
    if limit is None:
        # Doubling waits a whole recovery_s of health, not a step: at 1 s steps the answers to a
        # doubled rate had not come back when the next doubling went out (R = 20 climbed 18 -> 36
        # -> 72 in 2 s, and the failed probe went back to 36, never confirmed).
        return 2 * rate, max(config.step_s, config.recovery_s), 0.0, "no known limit"
    if rate > limit:
        return RELAXED_STEP * rate, config.recovery_s, 0.0, RELAXED
    if rate * (1 + 2 * PROBE_STEP) < limit:
        # Toward the limit in growing steps, at most halfway: a backoff left the rate just under the
        # site's limit, where a bisection over a stale limit costs a block per halving.
        step = min((limit - rate) / 2, rate * 2 * PROBE_STEP * 2**state.climbs)
        # Right after a failed climb the refused rate is near: the next step is as dear as a probe.
        block_wait_s = _probe_wait_s(state.failed_probes, rate, config) if state.reverted else 0.0
        return rate + step, config.recovery_s, block_wait_s, "toward the limit"
    probe = max(limit, rate) * (1 + PROBE_STEP)
    return probe, config.recovery_s, _probe_wait_s(state.failed_probes, rate, config), "probe"


def _probe_wait_s(failed: int, rate_rps: float, config: PolicyConfig) -> float:
    """Doubling with every failed probe, and at least :data:`PROBE_REQUESTS` requests apart: a
    failed probe costs a block or two, which must stay a small share of what the site serves."""
    doubling_s = config.recovery_s * float(2 ** min(failed, config.probe_backoff_max))
    return max(doubling_s, PROBE_REQUESTS / max(rate_rps, MIN_RATE_RPS)) if failed else doubling_s


def _set_rate(
    state: DomainState,
    config: PolicyConfig,
    *,
    now_s: float,
    ceiling: int,
    rate: float,
    action: Action,
    why: str,
    latency_ms: float | None = None,
    **changes: Any,
) -> Decision | None:
    """Limits for ``rate``: unthrottled (and every memory of a limit gone) once it reaches them."""
    pace = config.pace(max(latency_ms or 0.0, state.latency_ms or 0.0))
    concurrency, delay = pace.limits(rate, ceiling, config.base_delay_ms)
    if action != "climb":
        concurrency = min(concurrency, state.concurrency)  # a decrease never raises P_d
    if (concurrency, delay) == (ceiling, config.base_delay_ms) and action == "climb":
        changes.update(good_rps=None, limit_rps=None, failed_probes=0, probing=False, relaxed=False)
        rate_rps: float | None = None
    else:
        rate_rps = rate
    if (concurrency, delay) == (state.concurrency, state.delay_ms) and rate_rps == state.rate_rps:
        return None
    new = _changed(state, now_s, concurrency=concurrency, delay_ms=delay, rate_rps=rate_rps, **changes)
    shown = "unthrottled" if rate_rps is None else f"{rate_rps:.2f} requests/s"
    reason = (
        f"{action}: {why}: {shown}, "
        f"concurrency {state.concurrency} -> {concurrency}, delay {state.delay_ms} -> {delay} ms"
    )
    return Decision(new, Command(action, concurrency, delay, False, reason))


def _backoff_rate(counts: WindowCounts, state: DomainState, config: PolicyConfig) -> float:
    """Just under what the site let through, and below what was sent; a throttled rate at most
    halved, as the seed's rule does."""
    current = current_rate(state, config, counts.latency_ms)
    passed = max(counts.pass_rps or 0.0, counts.peak_pass_rps or 0.0)
    rate = BACKOFF * min(current, passed if passed > 0 else current / 2)
    if state.rate_rps is not None:
        # A window right after a backoff holds the burst's last answers and the fetchers' cooldown
        # silence: "sent 2.76/s, passed 0.46/s" cut a rate just set to 3.6/s to 0.41/s, and the
        # climbs back took 55 s (3 loop runs in 13 at the defaults). Halving steps still reach a
        # limit far below in a few seconds.
        rate = max(rate, HALVE * current)
    return max(MIN_RATE_RPS, rate)


def _tightened(
    counts: WindowCounts,
    state: DomainState,
    config: PolicyConfig,
    now_s: float,
    refused: float | None = None,
) -> dict[str, Any]:
    """State of a decrease: what was sent (or ``refused``) is the limit, nothing is known good."""
    if refused is None:
        # In the units of the rates set (the fleet's own overhead is in both). Unthrottled, nothing
        # is known yet: a new domain's first blocks come from a ramp-up burst, and taking what was
        # sent then for the limit held the fleet at a quarter of R for 30 s. Climbing by doubling
        # finds it in a few steps, and the next backoff measures it.
        refused = state.rate_rps
    changes: dict[str, Any] = {}
    if refused is not None and state.limit_rps is not None and refused < state.limit_rps / 2:
        # Failed probes count against one limit: one far below it (a 403 burst refusing every
        # request) is probed afresh, else the probes of the old one kept it 70 requests apart,
        # 84 s at 0.83 requests/s after the burst had ended.
        changes["failed_probes"] = 0
    return changes | {
        "climbs": 0,
        "good_rps": None,
        "limit_rps": refused,
        "probing": False,
        "hold_until_s": _hold_until(counts, config, now_s, state.hold_until_s),
        "last_block_s": now_s if counts.pushback > 0 else state.last_block_s,
    }


def _hold_until(
    counts: WindowCounts, config: PolicyConfig, now_s: float, current: float | None
) -> float | None:
    """The Retry-After of the window, as every fetcher honours it (:func:`core.limits.cooldown_s`)."""
    if not counts.max_retry_after_s:
        return current
    until = now_s + cooldown_s(counts.max_retry_after_s, config.cooldown_base_ms, config.cooldown_cap_ms)
    return max(until, current or until)


def _effective_ceiling(
    config: PolicyConfig, budget: Budget | None, priority: Priority
) -> tuple[int, str | None]:
    if budget is None or priority != "low" or budget.used_fraction < config.budget_fraction:
        return config.ceiling, None
    note = (
        f"daily {budget.unit} budget {budget.used_fraction:.0%} used "
        f"({budget.used:g} of {budget.daily_requests:g}); "
        "low-priority domain limited to concurrency 1"
    )
    return 1, note


def _changed(state: DomainState, now_s: float, **changes: Any) -> DomainState:
    """``state`` with ``changes`` made at ``now_s``: a change restarts the healthy streak."""
    changes.setdefault("reverted", False)
    changes.setdefault("relaxed", False)
    return replace(state, last_change_s=now_s, healthy_windows=0, healthy_since_s=None, **changes)


def _can_change(state: DomainState, config: PolicyConfig, now_s: float) -> bool:
    """At most one change per window step."""
    return state.last_change_s is None or _step(now_s, config) > _step(state.last_change_s, config)


def _steps_since_change(state: DomainState, config: PolicyConfig, now_s: float) -> float:
    """Whole steps from the first step boundary after the last change to ``now_s``: how much of a
    window judged now (it starts at that boundary) can hold only answers to what followed it."""
    if state.last_change_s is None:
        return math.inf
    return (now_s - math.ceil(state.last_change_s / config.step_s) * config.step_s) / config.step_s


def _step(time_s: float, config: PolicyConfig) -> int:
    return math.floor(time_s / config.step_s)


def _ratio_text(counts: WindowCounts) -> str:
    text = f"blocked {counts.blocked_ratio:.1%} of {counts.total} fetches"
    if counts.pushback > counts.blocked:
        text += f", pushback {counts.pushback_ratio:.1%}"
    return text


def _pass_text(counts: WindowCounts) -> str:
    sent, passed = counts.rate_rps, counts.pass_rps
    if sent is None or passed is None:
        return "rate unknown"
    return f"sent {sent:.2f}/s, passed {passed:.2f}/s"


def _retry_after_text(counts: WindowCounts) -> str:
    return f", Retry-After {counts.max_retry_after_s:g} s" if counts.max_retry_after_s else ""
