"""Two timescales at the shipped defaults: the fast window reacts in seconds, the 10-minute one remembers.

The simulated fleet (:mod:`tests.support.throttle_sim`) runs the real policy on the processor's own
bucket values, with every ``DUALPLANE_THROTTLE_*`` at its default and only P_d and the delay opened
up (8 and 0) so that the site's limit binds, as issue 33 measured it: 20 ms responses, the fleet's
own ~35 ms per request, the fetch hold jitter at its default (0.2).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from dualplane.core.settings import FetchSettings, LimitSettings, ThrottleSettings
from dualplane.data_plane.throttle.policy import DomainState, PolicyConfig, decide
from dualplane.data_plane.throttle.signals import WindowCounts
from tests.support.throttle_sim import SimResult, SimSite, simulate

pytestmark = pytest.mark.unit

DEFAULTS = PolicyConfig.from_settings(
    ThrottleSettings(), LimitSettings(domain_concurrency=8, domain_delay_ms=0), FetchSettings()
)
BLOCKING_S, DURATION_S = 90, 150


def run(max_rps: float, retry_after_s: float | None, seed: int) -> SimResult:
    site = SimSite(max_rps, relax_at_s=BLOCKING_S, retry_after_s=retry_after_s, latency_ms=20)
    return simulate(
        site, DEFAULTS, duration_s=DURATION_S, window_s=DEFAULTS.window_s,
        jitter=DEFAULTS.hold_jitter, overhead_ms=35, seed=seed,
    )  # fmt: skip


def test_the_defaults_have_a_fast_layer_of_seconds_under_the_seeds_10_minute_window() -> None:
    assert (DEFAULTS.window_s, DEFAULTS.step_s) == (6.0, 1.0)
    assert (DEFAULTS.slow_window_s, DEFAULTS.slow_step_s, DEFAULTS.threshold) == (600.0, 60.0, 0.05)


@pytest.mark.parametrize("seed", [1])
@pytest.mark.parametrize("retry_after_s", [1.0, None], ids=["429", "captcha"])
@pytest.mark.parametrize("max_rps", [2, 5, 20])
def test_a_fresh_domain_comes_down_to_its_limit_in_a_second_and_is_back_within_a_minute(
    max_rps: float, retry_after_s: float | None, seed: int
) -> None:
    result = run(max_rps, retry_after_s, seed)
    first_s, first = result.commands[0]
    assert first.startswith("backoff") and first_s < 1.0, result.commands[:3]
    assert f"{0.9 * max_rps:.2f} requests/s" in first, first  # 90% of what the site let through
    held = result.between(30, BLOCKING_S)
    held_share = sum(s.requests for s in held) / len(held) / max_rps
    done, pages_s, requests, blocked = 0, None, 0, 0
    for second in result.seconds:  # up to the 500th page the site served
        requests, blocked = requests + second.requests, blocked + second.blocked
        done += second.requests - second.blocked
        if done >= 500:
            pages_s = second.t_s
            break
    back = (DEFAULTS.ceiling, DEFAULTS.base_delay_ms)
    relaxed = result.between(BLOCKING_S, DURATION_S)
    back_s = next((s.t_s - BLOCKING_S for s in relaxed if (s.concurrency, s.delay_ms) == back), None)
    figures = (
        f"held {held_share:.0%}, {blocked}/{requests} blocked, 500 pages at {pages_s} s, back {back_s} s"
    )
    # 70% is the simulator's bar: R = 20 with a captcha page holds 73-76% here over 10 seeds (its
    # probes and 2 s cooldowns, not the pace: slots are paced start to start, the fleet's own 35 ms
    # are no longer lost); the real loop's figures are in docs/throttle.md.
    assert held_share >= 0.7, figures
    assert blocked / requests < 0.02, figures
    assert pages_s is not None and pages_s < 150, figures
    assert back_s is not None and back_s <= 60, figures


def test_the_seeds_rule_halves_what_the_fast_layer_missed_over_the_slow_window() -> None:
    """3% blocked in every fast window (under the threshold), 8% over the slow one: halved."""
    held = DomainState(concurrency=1, delay_ms=200, last_change_s=0.0, rate_rps=4.0, backoff_s=0.0)
    fast = WindowCounts(total=30, blocked=1, span_s=6.0)
    slow = WindowCounts(total=250, blocked=20, span_s=60.0)
    decision = decide(fast, held, DEFAULTS, now_s=60.5, rng=random.Random(0), slow=slow)
    assert decision.command is not None and decision.command.action == "backoff"
    assert "the 10-minute rule" in decision.command.reason, decision.command.reason
    assert decision.state.rate_rps == pytest.approx(2.0)
    assert (decision.state.backoff_s, decision.state.hot, decision.state.limit_rps) == (60.5, True, 4.0)
    # A slow window holding less than a slow step of traffic is the fast layer's to judge.
    young = replace(slow, span_s=7.0)
    early = decide(fast, held, DEFAULTS, now_s=67.0, rng=random.Random(0), slow=young)
    assert early.command is None or "10-minute" not in early.command.reason


def test_a_fast_window_full_of_blocks_backs_off_and_never_pauses_the_domain() -> None:
    """A burst at P_d 8 is 60% blocked in its fast windows: that is a backoff, not a 10-minute pause."""
    state = DEFAULTS.initial_state()
    burst = WindowCounts(
        total=10, blocked=6, span_s=1.0, blocked_step_passed=4, blocked_step_sent=10, step_s=1
    )
    slow = WindowCounts(total=40, blocked=24, span_s=4.0)  # extreme over the slow window too
    paused = []
    for now_s in (0.5, 1.5, 2.5, 3.5):
        decision = decide(burst, state, DEFAULTS, now_s=now_s, rng=random.Random(0), slow=slow)
        state = decision.state
        paused.append(state.paused)
    # One extreme slow verdict (one slow step) is no streak: the pause needs pause_windows of them.
    assert not any(paused) and state.extreme_windows == 1, state
    assert state.rate_rps is not None and state.rate_rps <= 0.9 * 4, state


@pytest.mark.parametrize("seed", range(1, 21))
def test_a_403_burst_costs_a_block_per_cooldown_and_the_rate_comes_back_within_a_minute(seed: int) -> None:
    """Every request refused for 10 s (a 403 burst) at R = 5, on a site that answers a captcha page
    beyond R otherwise: each fetcher's own cooldown after a 403 (2 s, no Retry-After) keeps the burst
    to a request per cooldown, the fast layer backs off, and the climbs bring the rate back to 80%
    of R within a minute of the burst's end, on every seed. The captcha's shorter cooldown (1 s)
    applies only outside the burst: one cooldown of 1 s for every block left 8 of 20 seeds not back
    within 50 s (issue 33)."""
    site = SimSite(5, relax_at_s=BLOCKING_S, retry_after_s=None, latency_ms=20, forbidden=(30.0, 40.0))
    result = simulate(
        site, DEFAULTS, duration_s=BLOCKING_S, window_s=DEFAULTS.window_s,
        jitter=DEFAULTS.hold_jitter, overhead_ms=35, seed=seed,
    )  # fmt: skip
    in_burst = result.between(30, 40)
    assert sum(s.blocked for s in in_burst) <= 10 / 2 + 1, [(s.t_s, s.requests, s.blocked) for s in in_burst]
    back = next((s.t_s for s in result.seconds if s.t_s > 40 and s.requests >= 0.8 * 5), None)
    assert back is not None and back - 40 <= 50, result.commands


def test_a_site_slowing_down_is_slowed_by_latency_before_it_blocks() -> None:
    """Latency ten times its baseline (50 -> 500 ms) at 30 s, on a site that would block only far
    above: the latency rule cuts the rate within seconds, with no block at all."""
    site = SimSite(1000, relax_at_s=1e9, retry_after_s=None, latency_ms=50, slow_from_s=30)
    result = simulate(
        site, DEFAULTS, duration_s=45, window_s=DEFAULTS.window_s,
        jitter=DEFAULTS.hold_jitter, overhead_ms=35, seed=1,
    )  # fmt: skip
    slowed = [t for t, reason in result.commands if reason.startswith("slow:")]
    assert slowed and 30 < slowed[0] < 30 + 2 * DEFAULTS.window_s, result.commands
    assert sum(s.blocked for s in result.seconds) == 0


def test_a_backoff_right_after_a_backoff_at_most_halves_the_rate() -> None:
    """The loop at the defaults (429 without Retry-After, R = 5): backed off to 3.6/s at 2 s, the
    window judged at 4 s held the burst's last answers and the cooldown's silence (5 of 6 blocked,
    sent 2.76/s, passed 0.46/s) and cut the rate to 0.41/s; the climbs back took 55 s."""
    state = DEFAULTS.initial_state()
    burst = WindowCounts(total=5, blocked=1, span_s=1.0, blocked_step_passed=4, blocked_step_sent=5, step_s=1)
    first = decide(burst, state, DEFAULTS, now_s=2.0, rng=random.Random(0))
    assert first.command is not None and first.state.rate_rps == pytest.approx(3.6)
    echo = WindowCounts(total=6, blocked=5, span_s=2.17, blocked_step_passed=1, blocked_step_sent=6, step_s=1)
    second = decide(echo, first.state, DEFAULTS, now_s=4.2, rng=random.Random(0))
    assert second.command is not None and second.command.action == "backoff", second.command
    assert second.state.rate_rps == pytest.approx(1.8), second.command.reason  # halved, not 0.41


def test_the_short_cooldown_after_a_captcha_holds_more_of_the_limit_than_the_403s() -> None:
    """At R = 20 behind a captcha page most blocks are a probe one request too far: the 2 s cooldown
    idled the domain for ~40 requests each time (76% of R held over 10 seeds); the shipped 1 s after
    a captcha holds 84%, with as few blocks."""
    held: dict[int, list[float]] = {1000: [], 2000: []}
    blocked: dict[int, int] = {1000: 0, 2000: 0}
    for cooldown_ms, seed in [(ms, seed) for ms in held for seed in range(1, 6)]:
        site = SimSite(20, relax_at_s=BLOCKING_S, retry_after_s=None, latency_ms=20)
        result = simulate(
            site, DEFAULTS, duration_s=BLOCKING_S, window_s=DEFAULTS.window_s,
            jitter=DEFAULTS.hold_jitter, overhead_ms=35, seed=seed, challenge_cooldown_ms=cooldown_ms,
        )  # fmt: skip
        seconds = result.between(30, BLOCKING_S)
        held[cooldown_ms].append(sum(s.requests for s in seconds) / len(seconds) / 20)
        blocked[cooldown_ms] += sum(s.blocked for s in result.seconds)
    assert ThrottleSettings().cooldown_challenge_ms == 1000
    short, long = sorted(held[1000])[2], sorted(held[2000])[2]  # medians of 5 seeds
    assert short >= 0.8 and short > long + 0.03, held
    assert blocked[1000] <= 1.5 * blocked[2000] + 5, blocked
