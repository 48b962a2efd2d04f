"""The throttle policy: halving, cooldown, recovery, hysteresis, pause and the budget rule."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable
from dataclasses import replace

import pytest

from core.settings import LimitSettings, ThrottleSettings
from data_plane.throttle.policy import (
    Budget,
    Command,
    Decision,
    DomainState,
    PolicyConfig,
    WindowCounts,
    classify,
    cooldown_ms,
    decide,
)

pytestmark = pytest.mark.unit

CONFIG = PolicyConfig.from_settings(
    ThrottleSettings(
        window_size_s=60,
        window_step_s=10,
        threshold=0.05,
        min_samples=20,
        recovery_s=30,
        ceiling=8,
        base_delay_ms=1000,
        cooldown_base_ms=2000,
        cooldown_cap_ms=60_000,
        jitter=0.25,
        pause_ratio=0.5,
        pause_windows=2,
        pause_s=120,
    ),
    LimitSettings(),
)


def window(total: int, blocked: int, retry_after_s: float | None = None) -> WindowCounts:
    return WindowCounts(total=total, blocked=blocked, max_retry_after_s=retry_after_s)


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


# -- table-driven single decisions -------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "expected_action", "expected_concurrency"),
    [
        (window(100, 0), None, 8),  # healthy, at the ceiling: nothing to do
        (window(100, 5), None, 8),  # exactly at the threshold: not above it
        (window(100, 6), "halve", 4),  # just above
        (window(19, 19), None, 8),  # too few samples to judge, however bad
        (window(20, 2), "halve", 4),  # enough samples
        (window(40, 30), "halve", 4),  # extreme, but one window is not "stays extreme"
    ],
)
def test_single_decisions_from_the_initial_state(
    counts: WindowCounts, expected_action: str | None, expected_concurrency: int
) -> None:
    decision = decide(counts, CONFIG.initial_state(), CONFIG, now_s=1000.0, rng=random.Random(1))
    action = decision.command.action if decision.command else None
    assert (action, decision.state.concurrency) == (expected_action, expected_concurrency)


@pytest.mark.parametrize(
    ("concurrency", "halved"),
    [(8, 4), (7, 3), (3, 1), (2, 1), (1, 1)],
)
def test_halving_never_goes_below_one(concurrency: int, halved: int) -> None:
    state = DomainState(concurrency=concurrency, delay_ms=1000)
    decision = decide(window(50, 25), state, CONFIG, now_s=50.0, rng=random.Random(3))
    assert decision.state.concurrency == halved
    assert decision.command is not None
    assert decision.command.reason.startswith("halve: blocked 50.0% of 50 fetches")


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


def test_reason_names_the_numbers_an_operator_needs() -> None:
    decision = decide(window(40, 12, retry_after_s=30), CONFIG.initial_state(), CONFIG, now_s=5.0,
                      rng=random.Random(0))  # fmt: skip
    assert decision.command is not None
    reason = decision.command.reason
    assert "blocked 30.0% of 40 fetches" in reason
    assert "threshold 5.0%" in reason
    assert "Retry-After 30 s" in reason
    assert "concurrency 8 -> 4" in reason
    assert reason.endswith(f"delay 1000 -> {decision.command.delay_ms} ms")


# -- cooldown delay -----------------------------------------------------------------------------


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize(
    ("level", "jitter_draw", "retry_after_s", "expected_ms"),
    [
        (1, 0.0, None, 2000),
        (2, 0.0, None, 4000),
        (3, 0.0, None, 8000),
        (3, 1.0, None, 6000),  # jitter scales down by up to 25%
        (10, 0.0, None, 60_000),  # capped
        (10, 1.0, None, 45_000),  # capped, then jittered: never above the cap
        (1, 0.0, 7.2, 7200),  # Retry-After wins over a shorter cooldown
        (10, 0.0, 600, 600_000),  # ...and over the cap
        (1, 0.0, 0.0, 2000),
    ],
)
def test_cooldown(level: int, jitter_draw: float, retry_after_s: float | None, expected_ms: int) -> None:
    assert cooldown_ms(level, retry_after_s, CONFIG, FixedRandom(jitter_draw)) == expected_ms


def test_cooldown_grows_exponentially_over_consecutive_halvings() -> None:
    steps = [(10.0 * i, window(50, 20)) for i in range(6)]
    _, commands = run(steps, seed=0, config=replace(CONFIG, jitter=0.0))
    assert [c.delay_ms for c in commands] == [2000, 4000, 8000, 16_000, 32_000, 60_000]
    assert [c.concurrency for c in commands] == [4, 2, 1, 1, 1, 1]


def test_a_huge_retry_after_fits_the_avro_int() -> None:
    assert cooldown_ms(1, 1e12, CONFIG, random.Random(0)) == 2**31 - 1


# -- at most one change per step ----------------------------------------------------------------


def test_at_most_one_change_per_window_step() -> None:
    # 1 evaluation per second, step 10 s, a persistently bad ratio: one halving per step.
    _, commands = run(every_second(100.0, 30, window(50, 10)))
    assert [c.concurrency for c in commands] == [4, 2, 1]


# -- recovery -----------------------------------------------------------------------------------


def test_recovery_is_additive_and_needs_the_sustained_period() -> None:
    throttled = DomainState(concurrency=1, delay_ms=16_000, last_change_s=0.0, backoffs=4)
    healthy = window(40, 0)
    state, commands = run(every_second(1.0, 30, healthy), throttled)  # healthy since t=1, up to t=30
    assert commands == [], "recovered before the 30 s healthy period"
    state, commands = run([(31.0, healthy)], state)
    assert [c.action for c in commands] == ["recover"]
    assert (commands[0].concurrency, commands[0].delay_ms) == (2, 16_000)  # P_d first, delay later
    assert state.backoffs == 3
    # The next +1 needs another full healthy period (from t=32), not just the next step.
    state, commands = run(every_second(32.0, 30, healthy), state)
    assert commands == []
    state, commands = run([(62.0, healthy)], state)
    assert [(c.concurrency, c.delay_ms) for c in commands] == [(3, 16_000)]


def test_the_delay_comes_down_only_once_concurrency_is_back_at_the_ceiling() -> None:
    throttled = DomainState(concurrency=6, delay_ms=8000, last_change_s=0.0)
    _, commands = run(every_second(1.0, 200, window(40, 0)), throttled)
    assert [(c.concurrency, c.delay_ms) for c in commands] == [
        (7, 8000),
        (8, 8000),
        (8, 4000),
        (8, 2000),
        (8, 1000),
    ]


def test_recovery_climbs_to_the_ceiling_and_stops() -> None:
    throttled = DomainState(concurrency=1, delay_ms=1000, last_change_s=0.0)
    state, commands = run(every_second(1.0, 600, window(40, 0)), throttled)
    assert [c.concurrency for c in commands] == [2, 3, 4, 5, 6, 7, 8]
    assert state.concurrency == CONFIG.ceiling
    assert all(c.action == "recover" for c in commands)


def test_a_failed_probe_doubles_the_wait_for_the_next_probe_onto_its_level() -> None:
    # At a delay the cooldown does not raise, rate follows P_d: the probe rate is 3 per 2 s.
    probing = DomainState(concurrency=3, delay_ms=2000, last_change_s=0.0, probing=True)
    state, commands = run([(10.0, window(40, 8))], probing)  # the probe to 3 was too much
    assert [c.action for c in commands] == ["halve"]
    assert (state.concurrency, state.delay_ms, state.failed_probes, state.probe_rate) == (1, 2000, 1, 1.5)
    state, commands = run(every_second(11.0, 31, window(40, 0)), state)
    assert [c.concurrency for c in commands] == [2], "below the limit the climb keeps its pace"
    state, commands = run(every_second(42.0, 59, window(40, 0)), state)
    assert commands == [], "probed the failed level again after only recovery_s"
    state, commands = run([(102.0, window(40, 0))], state)
    assert [c.concurrency for c in commands] == [3]
    assert (state.failed_probes, state.probe_rate) == (1, 1.5), "not redeemed until this probe holds"


def test_a_halved_delay_is_a_probe_too_when_the_site_refused_that_rate() -> None:
    """The anti-bot loop's case: P_d back at the ceiling, the delay halved, the site blocks. The next
    halving of the delay doubles the rate back onto the refused one, so it waits like a probe."""
    config = replace(CONFIG, ceiling=4, base_delay_ms=100, cooldown_base_ms=1000, jitter=0.0)
    probing = DomainState(concurrency=4, delay_ms=500, last_change_s=0.0, probing=True)
    state, _ = run([(10.0, window(40, 8))], probing, config)  # 8 requests/s were too many
    assert (state.concurrency, state.delay_ms, state.probe_rate) == (2, 1000, 8.0)
    rng, steps = random.Random(1), []
    for now_s in range(11, 200):
        decision = decide(window(40, 0), state, config, now_s=float(now_s), rng=rng)
        state = decision.state
        if decision.command is not None:
            steps.append((now_s, decision.command.concurrency, decision.command.delay_ms))
    assert [(c, d) for _, c, d in steps[:3]] == [(3, 1000), (4, 1000), (4, 500)]
    waits = [later[0] - earlier[0] for earlier, later in itertools.pairwise([(10, 2, 1000), *steps[:3]])]
    # (+1 s each: a healthy streak starts with the first verdict after a change)
    assert waits[:2] == [config.recovery_s + 1] * 2, f"below the refused rate: full pace ({waits})"
    assert waits[2] == 2 * config.recovery_s + 1, f"halved the delay onto the refused rate too soon ({waits})"


def test_a_probe_that_holds_redeems_a_failure_and_the_ceiling_forgets_them_all() -> None:
    on_limit = DomainState(concurrency=3, delay_ms=1000, last_change_s=0.0, failed_probes=2, probe_rate=3.0)
    state, commands = run(every_second(1.0, 31, window(40, 0)), on_limit)  # held on the limit
    assert [c.concurrency for c in commands] == [4]
    assert (state.failed_probes, state.probe_rate) == (1, None)
    near = DomainState(concurrency=7, delay_ms=1000, last_change_s=0.0, failed_probes=3, probe_rate=8.0)
    state, commands = run(every_second(1.0, 241, window(40, 0)), near)  # 30 s * 2^3 onto 8
    assert [c.concurrency for c in commands] == [8]
    assert (state.failed_probes, state.probe_rate) == (0, None)


def test_probing_a_site_whose_limit_lies_between_two_levels_spaces_the_failures_out() -> None:
    """A site that blocks whenever P_d >= 3: each failed probe waits longer, so blocks get rarer."""
    config = replace(CONFIG, ceiling=4, probe_backoff_max=3)
    state = config.initial_state()
    rng = random.Random(3)
    halvings: list[float] = []
    for now_s in range(1, 4000):
        counts = window(40, 10) if state.concurrency >= 3 else window(40, 0)
        decision = decide(counts, state, config, now_s=float(now_s), rng=rng)
        state = decision.state
        if decision.command is not None and decision.command.action == "halve":
            halvings.append(float(now_s))
    gaps = [later - earlier for earlier, later in itertools.pairwise(halvings)]
    assert len(gaps) >= 3
    assert gaps[0] < gaps[1] < gaps[2], f"failed probes did not space out: {gaps}"
    assert gaps[-1] == gaps[-2], "the wait must stop growing at probe_backoff_max"


def test_a_bad_window_restarts_the_healthy_period() -> None:
    throttled = DomainState(concurrency=2, delay_ms=1000, last_change_s=0.0)
    band = (26.0, window(100, 3))
    steps = [*every_second(1.0, 25, window(40, 0)), band, *every_second(27.0, 25, window(40, 0))]
    _, commands = run(steps, throttled)
    assert commands == [], "a 3% window (inside the hysteresis band) must restart the 30 s healthy period"


def test_low_traffic_windows_without_blocks_count_as_healthy() -> None:
    throttled = DomainState(concurrency=1, delay_ms=60_000, last_change_s=0.0, backoffs=5)
    _, commands = run(every_second(1.0, 40, window(6, 0)), throttled)
    assert [c.action for c in commands] == ["recover"]


def test_idle_windows_neither_recover_nor_throttle() -> None:
    throttled = DomainState(concurrency=1, delay_ms=8000, last_change_s=0.0)
    state, commands = run(every_second(1.0, 300, window(0, 0)), throttled)
    assert commands == []
    assert state.concurrency == 1


# -- hysteresis ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_no_flapping_around_the_threshold(seed: int) -> None:
    """A ratio oscillating around the threshold may tighten, never loosen."""
    rng = random.Random(seed)
    steps = []
    for i in range(600):
        ratio = CONFIG.threshold + rng.choice([-0.02, -0.01, 0.01, 0.02])
        steps.append((float(i), window(100, round(100 * ratio))))
    _, commands = run(steps, seed=seed)
    assert all(c.action == "halve" for c in commands)
    concurrencies = [c.concurrency for c in commands]
    assert concurrencies == sorted(concurrencies, reverse=True)


# -- pause --------------------------------------------------------------------------------------


def test_pause_when_the_ratio_stays_extreme_then_resume_after_the_pause() -> None:
    extreme = window(40, 30, retry_after_s=5)
    state, commands = run([(1.0, extreme), (11.0, extreme)])
    assert [c.action for c in commands] == ["halve", "pause"]
    pause = commands[-1]
    assert (pause.paused, pause.concurrency, pause.ttl_s) == (True, 1, CONFIG.pause_s)
    assert pause.delay_ms >= 5000
    # Stragglers during the pause change nothing.
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


# -- budget -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "priority", "expected_concurrency"),
    [
        (7999, "low", 8),
        (8000, "low", 1),
        (9500, "low", 1),
        (9500, "normal", 8),
    ],
)
def test_budget_rule(used: int, priority: str, expected_concurrency: int) -> None:
    budget = Budget(daily_requests=10_000, used=used)
    decision = decide(window(40, 0), CONFIG.initial_state(), CONFIG, now_s=1.0, rng=random.Random(0),
                      budget=budget, priority=priority)  # type: ignore[arg-type]  # fmt: skip
    assert decision.state.concurrency == expected_concurrency
    if expected_concurrency == 1:
        assert decision.command is not None
        assert decision.command.action == "budget"
        assert decision.command.reason.startswith("budget: daily request budget")


def test_budget_caps_recovery_of_low_priority_domains_until_the_day_turns() -> None:
    over = Budget(daily_requests=100, used=90)
    throttled = DomainState(concurrency=1, delay_ms=4000, last_change_s=0.0)
    state, commands = run(every_second(1.0, 200, window(40, 0)), throttled, budget=over, priority="low")
    assert {c.concurrency for c in commands} == {1}  # the delay may recover, the concurrency not
    fresh = Budget(daily_requests=100, used=0)
    _, commands = run(every_second(300.0, 30, window(40, 0)), state, budget=fresh, priority="low")
    assert [c.concurrency for c in commands] == [2]


def test_concurrency_above_a_lowered_ceiling_is_brought_down() -> None:
    state = DomainState(concurrency=16, delay_ms=1000)
    decision = decide(window(40, 0), state, CONFIG, now_s=1.0, rng=random.Random(0))
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
        steps.append((now_s, window(total, blocked, retry_after)))
    return steps


@pytest.mark.parametrize("seed", range(40))
def test_invariants_hold_on_random_traffic(seed: int) -> None:
    rng = random.Random(seed)
    budget = Budget(daily_requests=1000, used=rng.randint(0, 1000))
    state = CONFIG.initial_state()
    last_change_step = None
    concurrencies = {state.concurrency}
    for now_s, counts in random_traffic(rng, 300):
        decision = decide(counts, state, CONFIG, now_s=now_s, rng=rng, budget=budget,
                          priority=rng.choice(["low", "normal"]))  # fmt: skip
        state, command = decision.state, decision.command
        assert 1 <= state.concurrency <= CONFIG.ceiling
        assert state.delay_ms >= CONFIG.base_delay_ms
        concurrencies.add(state.concurrency)
        if command is None:
            continue
        assert (command.concurrency, command.delay_ms, command.paused) == (
            state.concurrency, state.delay_ms, state.paused,
        )  # fmt: skip
        if command.action in ("halve", "pause") and counts.max_retry_after_s:
            assert command.delay_ms >= math.ceil(counts.max_retry_after_s * 1000)
        step = math.floor(now_s / CONFIG.step_s)
        assert step != last_change_step, "two changes in one window step"
        last_change_step = step
    # The bounds above mean something only if the traffic moved P_d (up and down the range).
    assert len(concurrencies) > 2, f"random traffic barely moved P_d: {sorted(concurrencies)}"


def test_decisions_are_deterministic_for_a_seeded_rng() -> None:
    traffic = random_traffic(random.Random(99), 200)
    assert run(traffic, seed=5) == run(traffic, seed=5)


def test_state_round_trips_through_a_dict() -> None:
    state = DomainState(concurrency=3, delay_ms=8000, paused=True, last_change_s=12.5, healthy_windows=2,
                        extreme_windows=1, verdict_step=4, backoffs=3)  # fmt: skip
    assert DomainState.from_dict({**state.to_dict(), "added_later": 1}) == state


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
    ],
)
def test_invalid_configuration_is_refused_with_the_reason(changes: dict[str, object]) -> None:
    # The policy's rules live in the settings section it is built from: refused when read.
    with pytest.raises(ValueError, match=f"(?i){next(iter(changes))}"):  # the field or its variable
        ThrottleSettings(**changes)  # type: ignore[arg-type]
