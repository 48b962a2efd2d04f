"""Rates from the traffic that was seen: counts over the time a domain was crawled, never a window's length.

At the shipped 10-minute windows and 1-minute steps, a fresh domain crawled for 4 s of a window had
its 20 fetches divided by a minute: its first backoff landed at 0.18 requests/s against a site that
took 5 (issue 33). These build window values the way the processor does (``add_sample`` per event,
``merged`` over the judged window's buckets) and check the rates the policy reads.
"""

from __future__ import annotations

import random

import pytest

from dualplane.core.settings import LimitSettings, ThrottleSettings
from dualplane.data_plane.throttle.events import FetchSample
from dualplane.data_plane.throttle.policy import PolicyConfig, decide
from dualplane.data_plane.throttle.windows import add_sample, counts_of, merged, span_s, window_to_judge

pytestmark = pytest.mark.unit

SIZE_S, STEP_S = 600.0, 60.0  # the shipped window and step
T0 = 1_800_000_000.0  # a step boundary


def bucket_of(fetches: list[tuple[float, bool]]) -> dict[str, object]:
    """One step bucket holding ``(fetched_at_s, blocked)`` fetches of ``a.test``."""
    value: dict[str, object] = {}
    for offset, (at_s, blocked) in enumerate(fetches):
        outcome = "blocked_challenge" if blocked else "ok"
        value = add_sample(value, FetchSample("a.test", outcome, at_s, 20, None), 0, offset)
    return value


def burst(start_s: float, seconds: int, passed_per_s: int, blocked_per_s: int) -> list[tuple[float, bool]]:
    """What a site allowing ``passed_per_s`` answers to a fleet sending more, second by second."""
    fetches = []
    for second in range(seconds):
        per_s = passed_per_s + blocked_per_s
        fetches += [(start_s + second + i / per_s, i >= passed_per_s) for i in range(per_s)]
    return fetches


def test_a_windows_rates_count_from_the_domains_first_fetch_not_from_the_windows_start() -> None:
    # The window opened 5 minutes before the domain was first crawled; it was crawled for 4 s.
    now_s = T0 + 304.0
    fetches = burst(T0 + 300.0, 4, passed_per_s=3, blocked_per_s=2)
    window = window_to_judge(now_s, SIZE_S, STEP_S, None)
    assert window is not None and window[0] < T0 + 300.0 - 60
    value = merged([bucket_of(fetches)])
    counts = counts_of(value, span_s(window, now_s, STEP_S, value.get("first_s")), STEP_S)
    assert counts.rate_rps == pytest.approx(20 / 4)
    assert counts.pass_rps == pytest.approx(12 / 4)


def test_a_rate_counts_from_the_last_change_of_pace_when_that_is_later() -> None:
    window = (T0, T0 + SIZE_S - 0.1)
    assert span_s(window, T0 + 100.0, STEP_S, first_s=T0 + 10.0, since_s=T0 + 90.0) == 10.0
    assert span_s(window, T0 + 100.0, STEP_S, first_s=T0 + 10.0, since_s=None) == 90.0
    # Judged on its very first fetches: a second, the unit of a site's limit, not a whole step.
    assert span_s(window, T0 + 10.2, STEP_S, first_s=T0 + 10.0) == 1.0
    assert span_s(window, T0 + 900.0, STEP_S, first_s=T0) == pytest.approx(SIZE_S - 0.1)  # never past it


def test_the_busiest_blocked_step_is_measured_over_its_own_traffic_not_the_steps_length() -> None:
    # A burst of 13 fetches in a third of a second; the site let 5 through; then the fleet rested.
    fetches = [(T0 + 5 + i * 0.025, i >= 5) for i in range(13)]
    counts = counts_of(merged([bucket_of(fetches)]), 1.0, STEP_S)
    assert counts.peak_pass_rps == pytest.approx(5.0)  # over a second, not over 60 s (0.08)
    assert counts.peak_sent_rps == pytest.approx(13.0)
    # A step whose traffic took its whole length is measured over that length.
    spread = [(T0 + i * 2.0, i % 10 == 0) for i in range(30)]
    assert counts_of(merged([bucket_of(spread)]), 60.0, STEP_S).peak_pass_rps == pytest.approx(27 / 58)


def test_of_two_blocked_steps_the_one_that_let_the_most_through_per_second_is_the_measure() -> None:
    slow = bucket_of([(T0 + i * 2.0, i == 0) for i in range(30)])  # 29 passed over 58 s
    fast = bucket_of(burst(T0 + 60.0, 1, passed_per_s=5, blocked_per_s=3))  # 5 passed in a second
    counts = counts_of(merged([slow, fast]), 120.0, STEP_S)
    assert (counts.blocked_step_passed, counts.blocked_step_sent) == (5, 8)
    assert counts.peak_pass_rps == pytest.approx(5.0)


def test_a_fresh_domains_first_backoff_at_the_shipped_defaults_lands_near_what_the_site_let_through() -> None:
    """The issue's run: 20 fetches in ~4 s, 8 blocked, 10-minute windows; it backed off to 0.18/s."""
    config = PolicyConfig.from_settings(
        ThrottleSettings(), LimitSettings(domain_concurrency=8, domain_delay_ms=0)
    )
    first_s = T0 + 200.0
    fetches = burst(first_s, 4, passed_per_s=3, blocked_per_s=2)
    now_s = fetches[-1][0]
    window = window_to_judge(now_s, SIZE_S, STEP_S, None)
    assert window is not None
    value = merged([bucket_of(fetches)])
    counts = counts_of(value, span_s(window, now_s, STEP_S, value.get("first_s")), STEP_S)
    decision = decide(counts, config.initial_state(), config, now_s=now_s, rng=random.Random(0))
    assert decision.command is not None and decision.command.action == "backoff", decision
    # 12 passed from the first fetch to the last (3.8 s): 90% of it, where 12 / 60 s gave 0.18/s.
    assert decision.state.rate_rps == pytest.approx(0.9 * 12 / 3.8), decision.command.reason
