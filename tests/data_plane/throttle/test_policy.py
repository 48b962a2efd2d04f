"""The throttle policy: backoff to the pass rate, probes, climbs, latency, hysteresis, pause, budget."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable
from dataclasses import replace

import pytest

from dualplane.core.limits import cooldown_s
from dualplane.core.settings import LimitSettings, ThrottleSettings
from dualplane.data_plane.throttle.policy import (
    BACKOFF,
    MIN_RATE_RPS,
    NUDGE,
    PROBE_REQUESTS,
    Budget,
    Command,
    Decision,
    DomainState,
    PolicyConfig,
    classify,
    current_rate,
    decide,
)
from dualplane.data_plane.throttle.signals import WindowCounts

pytestmark = pytest.mark.unit

CONFIG = PolicyConfig.from_settings(
    ThrottleSettings(  # one window, no fast layer: the rules themselves (test_two_layers: both)
        window_size_s=60,
        window_step_s=10,
        fast_window_s=0,
        threshold=0.05,
        min_samples=20,
        recovery_min_samples=5,
        recovery_s=30,
        ceiling=8,
        base_delay_ms=1000,
        cooldown_base_ms=2000,
        cooldown_cap_ms=60_000,
        jitter=0.0,
        pause_ratio=0.5,
        pause_windows=2,
        pause_s=120,
        latency_factor=3.0,
        latency_min_ms=200,
    ),
    LimitSettings(),
)
FULL_RPS = current_rate(CONFIG.initial_state(), CONFIG)  # 8 slots, 1 s apart: 8 requests/s


def window(
    total: int, blocked: int = 0, retry_after_s: float | None = None, span_s: float = 60.0, **more: float
) -> WindowCounts:
    return WindowCounts(total=total, blocked=blocked, max_retry_after_s=retry_after_s, span_s=span_s, **more)  # type: ignore[arg-type]


def run(
    steps: Iterable[tuple[float, WindowCounts]],
    state: DomainState | None = None,
    config: PolicyConfig = CONFIG,
    seed: int = 7,
    **kwargs: object,
) -> tuple[DomainState, list[Command]]:
    """Feed evaluations in time order; return the final state and every command issued."""
    rng = random.Random(seed)
    state = state or config.initial_state()
    commands = []
    for now_s, counts in steps:
        decision: Decision = decide(counts, state, config, now_s=now_s, rng=rng, **kwargs)  # type: ignore[arg-type]
        state = decision.state
        if decision.command is not None:
            commands.append(decision.command)
    return state, commands


def every_second(start_s: float, seconds: int, counts: WindowCounts) -> list[tuple[float, WindowCounts]]:
    return [(start_s + i, counts) for i in range(seconds)]


def throttled(rate_rps: float, **fields: object) -> DomainState:
    """A domain held at ``rate_rps`` (one slot) since t=0."""
    delay = math.ceil(1000 / rate_rps)
    return DomainState(concurrency=1, delay_ms=delay, last_change_s=0.0, rate_rps=rate_rps, **fields)  # type: ignore[arg-type]


# -- single decisions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "expected_action"),
    [
        (window(100, 0), None),  # healthy, unthrottled: nothing to do
        (window(100, 5), None),  # exactly at the threshold: not above it
        (window(100, 6), "backoff"),  # just above
        (window(19, 19), None),  # too few samples to judge, however bad
        (window(20, 2), "backoff"),  # enough samples
        (window(40, 30), "backoff"),  # extreme, but one window is not "stays extreme"
    ],
)
def test_single_decisions_from_the_initial_state(counts: WindowCounts, expected_action: str | None) -> None:
    decision = decide(counts, CONFIG.initial_state(), CONFIG, now_s=1000.0, rng=random.Random(1))
    assert (decision.command.action if decision.command else None) == expected_action


def test_a_backoff_goes_to_just_under_what_the_site_let_through_in_one_step() -> None:
    # 240 fetches in 60 s (4/s), 60 blocked: the site let 3/s through. Halving P_d would give 4/s of
    # slots; the policy goes to 90% of the pass rate instead.
    decision = decide(window(240, 60), CONFIG.initial_state(), CONFIG, now_s=100.0, rng=random.Random(0))
    assert decision.command is not None
    assert decision.state.rate_rps == pytest.approx(BACKOFF * 3.0)
    assert decision.state.limit_rps is None, "a first backoff knows no limit yet: it climbs by doubling"
    assert current_rate(replace(decision.state, rate_rps=None), CONFIG) == pytest.approx(2.7, rel=0.05)
    assert "sent 4.00/s, passed 3.00/s" in decision.command.reason


def test_the_busiest_blocked_step_measures_a_per_second_limit_better_than_the_mean() -> None:
    # Fetchers rest after each block, so the window's mean pass rate (60 in 60 s) undersells a site
    # that let 5 through in its busiest blocked second.
    counts = window(90, 30, blocked_step_passed=5, blocked_step_sent=9, step_s=1.0)
    decision = decide(counts, CONFIG.initial_state(), CONFIG, now_s=100.0, rng=random.Random(0))
    assert decision.state.rate_rps == pytest.approx(BACKOFF * 5)


def test_the_first_step_after_a_change_does_not_back_off_again() -> None:
    """Its window holds answers to requests sent before the change."""
    state = throttled(0.5)  # changed at t=0; steps of 10 s
    one_step = decide(window(30, 10, span_s=10), state, CONFIG, now_s=15.0, rng=random.Random(0))
    assert one_step.command is None
    # Two steps on, even if the traffic came in one burst (a span of a second): judged.
    two_steps = decide(window(30, 10, span_s=1), state, CONFIG, now_s=25.0, rng=random.Random(0))
    assert two_steps.command is not None and two_steps.command.action == "backoff"


def test_a_backoff_of_a_throttled_domain_remembers_the_refused_rate() -> None:
    decision = decide(window(30, 10, span_s=20), throttled(0.5), CONFIG, now_s=100.0, rng=random.Random(0))
    assert decision.state.limit_rps == 0.5


def test_a_backoff_never_raises_the_rate_or_p_d() -> None:
    state = throttled(0.5)
    decision = decide(window(30, 10, span_s=20), state, CONFIG, now_s=100.0, rng=random.Random(0))
    assert decision.state.rate_rps is not None and decision.state.rate_rps <= 0.45
    assert decision.state.concurrency == 1


@pytest.mark.parametrize(
    ("total", "blocked", "verdict"),
    [
        (0, 0, "none"),
        (4, 0, "none"),
        (5, 0, "healthy"),
        (10, 1, "none"),
        (40, 1, "healthy"),  # 2.5% <= threshold * recover_fraction
        (100, 3, "band"),  # 3%: below the threshold, above the recovery line
        (100, 6, "unhealthy"),
        (100, 50, "extreme"),
    ],
)
def test_classify(total: int, blocked: int, verdict: str) -> None:
    assert classify(window(total, blocked), CONFIG) == verdict


@pytest.mark.parametrize(
    ("more", "pushback"),
    [
        ({"blocked": 2}, 2.0),  # 429, 403, captcha
        ({"server_errors": 2, "overloaded": 2}, 2.0),  # 503s
        ({"server_errors": 4}, 1.0),  # other 5xx
        ({"resets": 2}, 1.0),
        ({"timeouts": 4}, 1.0),
    ],
)
def test_pushback_signals_have_their_own_weights(more: dict[str, int], pushback: float) -> None:
    counts = WindowCounts(total=20, **more)
    assert counts.pushback == pushback
    assert classify(counts, CONFIG) == ("unhealthy" if pushback / 20 > CONFIG.threshold else "band")


def test_reason_names_the_numbers_an_operator_needs() -> None:
    decision = decide(window(40, 12, retry_after_s=30), CONFIG.initial_state(), CONFIG, now_s=5.0,
                      rng=random.Random(0))  # fmt: skip
    assert decision.command is not None
    reason = decision.command.reason
    for part in ("backoff: blocked 30.0% of 40 fetches", "threshold 5.0%", "Retry-After 30 s", "passed",
                 "requests/s", "concurrency 8 -> 1"):  # fmt: skip
        assert part in reason


def test_at_most_one_change_per_window_step() -> None:
    # 1 evaluation per second, step 10 s, a persistently bad ratio: at most one backoff per step,
    # and the step right after one is not judged (it holds answers to what was sent before): at
    # t=100 and t=120 of 100..129.
    state, commands = run(every_second(100.0, 30, window(50, 10, span_s=20)))
    assert len(commands) == 2
    rates = [state.rate_rps]
    assert rates[0] is not None and rates[0] < FULL_RPS


# -- climbing, probes and the remembered limit --------------------------------------------------


def test_a_block_right_after_a_climb_undoes_it_at_once() -> None:
    state = throttled(2.0, good_rps=2.0, held_rps=2.0, limit_rps=3.0)
    state = replace(state, rate_rps=2.5, probing=True, last_change_s=100.0)
    # Same window step as the climb: a failed probe does not wait for the next one.
    decision = decide(window(3, 1, span_s=1), state, CONFIG, now_s=101.0, rng=random.Random(0))
    assert decision.command is not None and decision.command.action == "probe_failed"
    assert decision.state.rate_rps == 2.0
    assert decision.state.limit_rps == 2.5, "the refused rate is the limit now"
    assert decision.state.failed_probes == 1


def test_a_lone_block_at_a_held_rate_nudges_it_down_and_marks_the_limit() -> None:
    """At 2 requests/s one block in a small window is 10-20%: a backoff to 90% of that window's pass
    rate held R = 2 at 72% of it for 20 s. One block means the rate is just over the limit."""
    state = throttled(2.0, latency_ms=0.0)
    decision = decide(window(10, 1, span_s=5), state, CONFIG, now_s=100.0, rng=random.Random(0))
    assert decision.command is not None and decision.command.action == "nudge"
    assert decision.state.rate_rps == pytest.approx(NUDGE * 2.0)
    assert decision.state.limit_rps == 2.0
    two = decide(window(30, 2, span_s=20), state, CONFIG, now_s=100.0, rng=random.Random(0))
    assert two.command is not None and two.command.action == "backoff"


def test_a_failed_probes_echoes_are_no_new_signal_until_the_window_slid_past_it() -> None:
    state = throttled(2.0, good_rps=2.0, held_rps=2.0, limit_rps=3.0)
    state = replace(state, rate_rps=2.5, probing=True, last_change_s=100.0)
    reverted = decide(window(3, 1, span_s=1), state, CONFIG, now_s=101.0, rng=random.Random(0)).state
    assert reverted.reverted
    # The site still counts the probe's requests: more blocks right after it change nothing...
    for now_s, blocked in ((125.0, 1), (150.0, 3)):
        echo = decide(window(30, blocked, span_s=20), reverted, CONFIG, now_s=now_s, rng=random.Random(0))
        assert echo.command is None, echo.command
    # ...but a block once the window holds only what followed the revert does.
    later = decide(window(30, 1, span_s=60), reverted, CONFIG, now_s=175.0, rng=random.Random(0))
    assert later.command is not None and later.command.action == "nudge"


def test_once_a_probe_over_the_limit_held_the_climb_back_grows_fourfold() -> None:
    state = throttled(0.5, limit_rps=0.4, latency_ms=0.0)  # held above the refused rate: relaxed
    state, commands = run(every_second(1.0, 120, window(40, 0)), state)
    relaxed = [c.reason for c in commands if c.action == "climb"]
    assert "the site relaxed" in relaxed[0] and "after the site relaxed" in relaxed[1]
    assert len(commands) <= 4 and state.rate_rps is None  # 0.5 -> 1 -> 4 -> unthrottled (8/s)


def test_healthy_traffic_climbs_toward_the_limit_in_growing_steps_then_probes_it() -> None:
    state = throttled(1.0, limit_rps=2.0)
    state, commands = run(every_second(1.0, 300, window(40, 0)), state)
    rates = [
        float(c.reason.split(": ")[2].split(" requests/s")[0])
        for c in commands
        if "unthrottled" not in c.reason
    ]
    # +10%, +20%, then +40% would pass halfway to the refused 2/s: halfway it is.
    assert rates[:3] == [1.1, 1.32, pytest.approx((1.32 + 2) / 2, abs=0.01)]
    # Then a probe above the refused 2/s; it held, so the site relaxed: faster and faster, to the top.
    assert any("probe" in c.reason for c in commands)
    assert state.rate_rps is None and (state.concurrency, state.delay_ms) == (8, 1000)


def test_failed_probes_come_further_apart_and_never_cost_more_than_one_request_in_sixty() -> None:
    config = replace(CONFIG, recovery_s=2.0, step_s=1.0)
    state = throttled(1.9, limit_rps=2.0, good_rps=1.9)
    probes = []
    for now_s in range(1, 400):
        counts = (
            window(5, 0, span_s=5)
            if state.rate_rps is None or state.rate_rps <= 2.0
            else window(5, 1, span_s=5)
        )
        decision = decide(counts, state, config, now_s=float(now_s), rng=random.Random(0))
        if decision.command is not None and decision.command.action == "climb":
            probes.append(now_s)
        state = decision.state
    gaps = [b - a for a, b in itertools.pairwise(probes)]
    assert len(probes) >= 5
    assert gaps == sorted(gaps), "probe waits never shrink while probes fail"
    assert min(gaps[1:]) >= PROBE_REQUESTS / 2.0, "at 2 requests/s, 60 requests between failed probes"


def test_no_climb_before_the_retry_after_cooldown_is_over() -> None:
    decision = decide(window(100, 20, retry_after_s=45), CONFIG.initial_state(), CONFIG, now_s=10.0,
                      rng=random.Random(0))  # fmt: skip
    hold_s = cooldown_s(45, CONFIG.cooldown_base_ms, CONFIG.cooldown_cap_ms)
    assert decision.state.hold_until_s == 10.0 + hold_s
    _, commands = run(every_second(11.0, int(hold_s) - 2, window(40, 0)), decision.state)
    assert commands == []


def test_back_to_the_rate_that_held_in_one_step_after_a_latency_slowdown_passes() -> None:
    state = throttled(1.0, good_rps=4.0, latency_ms=100.0)
    state, commands = run(every_second(1.0, 11, window(40, 0, latency_ms_sum=4000)), state)
    assert [c.action for c in commands] == ["climb"]
    assert state.rate_rps == 2.0  # doubling toward the 4/s that held, a step at a time
    state, commands = run(every_second(20.0, 11, window(40, 0, latency_ms_sum=4000)), state)
    assert state.rate_rps == 4.0


def test_a_bad_window_restarts_the_healthy_period() -> None:
    state = throttled(1.0, limit_rps=4.0)
    band = (26.0, window(100, 3))
    steps = [*every_second(1.0, 25, window(40, 0)), band, *every_second(27.0, 25, window(40, 0))]
    _, commands = run(steps, state)
    assert commands == [], "a 3% window (inside the hysteresis band) must restart the 30 s healthy period"


def test_low_traffic_windows_without_blocks_count_as_healthy() -> None:
    _, commands = run(every_second(1.0, 40, window(6, 0)), throttled(0.05, limit_rps=1.0))
    assert [c.action for c in commands] == ["climb"]


def test_idle_windows_neither_climb_nor_throttle() -> None:
    state, commands = run(every_second(1.0, 300, window(0, 0)), throttled(0.2))
    assert commands == []
    assert state.rate_rps == 0.2


@pytest.mark.parametrize("seed", range(20))
def test_no_flapping_around_the_threshold(seed: int) -> None:
    """A ratio oscillating around the threshold may tighten, never loosen."""
    rng = random.Random(seed)
    steps = []
    for i in range(600):
        ratio = CONFIG.threshold + rng.choice([-0.02, -0.01, 0.01, 0.02])
        steps.append((float(i), window(100, round(100 * ratio))))
    _, commands = run(steps, seed=seed)
    assert all(c.action == "backoff" for c in commands)


# -- latency as a signal ------------------------------------------------------------------------


def test_a_latency_rise_slows_the_domain_before_any_block() -> None:
    # A baseline of 100 ms learnt from clean windows, then the site slows down to 800 ms: still no
    # block, but the rate is cut before the site starts refusing.
    fast, slow = window(40, 0, latency_ms_sum=40 * 100), window(40, 0, latency_ms_sum=40 * 800)
    state, commands = run([(10.0 * i, fast) for i in range(1, 6)])
    assert commands == [] and state.latency_ms == pytest.approx(100)
    state, commands = run([(60.0, slow)], state)
    assert [c.action for c in commands] == ["slow"]
    assert state.rate_rps is not None and state.rate_rps < FULL_RPS
    assert "latency 800 ms is over 3x its baseline 100 ms" in commands[0].reason
    assert state.latency_ms == pytest.approx(100), "a slow window does not become the baseline"


def test_latency_within_its_noise_is_no_signal() -> None:
    fast, noisy = window(40, 0, latency_ms_sum=40 * 20), window(40, 0, latency_ms_sum=40 * 150)
    state, _ = run([(10.0 * i, fast) for i in range(1, 6)])
    _, commands = run([(60.0, noisy)], state)
    assert commands == [], "7x a 20 ms baseline is only 130 ms slower: below latency_min_ms"


# -- pause --------------------------------------------------------------------------------------


def test_pause_when_the_ratio_stays_extreme_then_resume_after_the_pause() -> None:
    extreme = window(40, 30, retry_after_s=5)
    state, commands = run([(1.0, extreme), (11.0, extreme)])
    assert [c.action for c in commands] == ["backoff", "pause"]
    pause = commands[-1]
    assert (pause.paused, pause.concurrency, pause.ttl_s) == (True, 1, CONFIG.pause_s)
    state, commands = run(every_second(12.0, 100, extreme), state)
    assert commands == []
    assert state.paused
    state, commands = run([(131.0, window(0, 0))], state)
    assert [c.action for c in commands] == ["resume"]
    assert (commands[0].paused, commands[0].concurrency) == (False, 1)
    assert not state.paused


def test_one_extreme_window_between_normal_ones_does_not_pause() -> None:
    extreme, healthy = window(40, 30), window(40, 0)
    _, commands = run([(1.0, extreme), (11.0, healthy), (21.0, extreme)])
    assert "pause" not in [c.action for c in commands]


# -- budget and ceiling -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "priority", "expected_concurrency"),
    [(7999, "low", 8), (8000, "low", 1), (9500, "low", 1), (9500, "normal", 8)],
)
def test_budget_rule(used: int, priority: str, expected_concurrency: int) -> None:
    budget = Budget(daily_requests=10_000, used=used)
    decision = decide(window(40, 0), CONFIG.initial_state(), CONFIG, now_s=1.0, rng=random.Random(0),
                      budget=budget, priority=priority)  # type: ignore[arg-type]  # fmt: skip
    assert decision.state.concurrency == expected_concurrency
    if expected_concurrency == 1:
        assert decision.command is not None
        assert decision.command.reason.startswith("budget: daily request budget")


def test_budget_caps_the_climb_of_low_priority_domains_until_the_day_turns() -> None:
    over = Budget(daily_requests=100, used=90)
    state, commands = run(every_second(1.0, 200, window(40, 0)), throttled(0.25, limit_rps=2.0),
                          budget=over, priority="low")  # fmt: skip
    assert {c.concurrency for c in commands} == {1}
    fresh = Budget(daily_requests=100, used=0)
    state, _ = run(every_second(300.0, 300, window(40, 0)), state, budget=fresh, priority="low")
    assert state.concurrency > 1


def test_concurrency_above_a_lowered_ceiling_is_brought_down() -> None:
    decision = decide(window(40, 0), DomainState(16, 1000), CONFIG, now_s=1.0, rng=random.Random(0))
    assert decision.command is not None
    assert (decision.command.action, decision.state.concurrency) == ("ceiling", 8)


# -- properties over random traffic -------------------------------------------------------------


def random_traffic(rng: random.Random, evaluations: int) -> list[tuple[float, WindowCounts]]:
    steps, now_s = [], 0.0
    for _ in range(evaluations):
        now_s += rng.choice([0.1, 1.0, 3.0, 10.0, 45.0])
        total = rng.choice([0, 3, 10, 20, 50, 200])
        blocked = rng.randint(0, total) if rng.random() < 0.5 else 0
        retry_after = rng.choice([None, None, 1.0, 30.0, 90.0])
        latency = rng.choice([50, 50, 50, 900]) * total
        steps.append((now_s, window(total, blocked, retry_after, span_s=rng.choice([1.0, 10.0, 60.0]),
                                    latency_ms_sum=latency)))  # fmt: skip
    return steps


@pytest.mark.parametrize("seed", range(40))
def test_invariants_hold_on_random_traffic(seed: int) -> None:
    rng = random.Random(seed)
    budget = Budget(daily_requests=1000, used=rng.randint(0, 1000))
    state = CONFIG.initial_state()
    last_change_step = None
    rates = {state.rate_rps}
    concurrencies = {state.concurrency}
    for now_s, counts in random_traffic(rng, 300):
        decision = decide(counts, state, CONFIG, now_s=now_s, rng=rng, budget=budget,
                          priority=rng.choice(["low", "normal"]))  # fmt: skip
        before, (state, command) = state, (decision.state, decision.command)
        assert 1 <= state.concurrency <= CONFIG.ceiling
        if classify(counts, CONFIG) == "unhealthy" and before.rate_rps is not None:
            # A window that blocks never speeds a paced domain up (beyond the floor of MIN_RATE_RPS).
            assert state.rate_rps is not None
            assert state.rate_rps <= max(before.rate_rps, MIN_RATE_RPS) * (1 + 1e-9), f"{before} -> {state}"
        assert CONFIG.base_delay_ms <= state.delay_ms < 2**31
        assert state.rate_rps is None or state.rate_rps > 0
        rates.add(state.rate_rps)
        concurrencies.add(state.concurrency)
        if command is None:
            continue
        assert (command.concurrency, command.delay_ms, command.paused) == (
            state.concurrency, state.delay_ms, state.paused,
        )  # fmt: skip
        step = math.floor(now_s / CONFIG.step_s)
        if command.action != "probe_failed":
            assert step != last_change_step, "two changes in one window step"
        last_change_step = step
    assert len(rates) > 3, f"random traffic barely moved the rate: {rates}"
    # The bounds above were put to the test: the run backed off below the ceiling at least once.
    assert min(concurrencies) < CONFIG.ceiling, f"random traffic never lowered concurrency: {concurrencies}"


def test_decisions_are_deterministic_for_a_seeded_rng() -> None:
    traffic = random_traffic(random.Random(99), 200)
    assert run(traffic, seed=5) == run(traffic, seed=5)


def test_state_round_trips_through_a_dict_and_reads_an_older_writers_state() -> None:
    state = DomainState(concurrency=3, delay_ms=8000, paused=True, last_change_s=12.5, healthy_windows=2,
                        extreme_windows=1, verdict_step=4, rate_rps=1.5, limit_rps=2.0,
                        latency_ms=80.0)  # fmt: skip
    assert DomainState.from_dict({**state.to_dict(), "added_later": 1}) == state
    older = {"concurrency": 2, "delay_ms": 4000, "backoffs": 3, "probe_rate": 0.5}  # before rates
    assert DomainState.from_dict(older) == DomainState(concurrency=2, delay_ms=4000)


@pytest.mark.parametrize(
    "changes",
    [
        {"threshold": 0.0},
        {"min_samples": 0},
        {"ceiling": 0},
        {"pause_ratio": 0.01},
        {"cooldown_cap_ms": 10},
        {"window_size_s": 90},
        {"jitter": 1.0},
        {"latency_factor": -1},
    ],
)
def test_invalid_configuration_is_refused_with_the_reason(changes: dict[str, object]) -> None:
    # The policy's rules live in the settings section it is built from: refused when read.
    with pytest.raises(ValueError, match=f"(?i){next(iter(changes))}"):  # the field or its variable
        ThrottleSettings(**changes)  # type: ignore[arg-type]
