"""One owner for the cooldown after a site pushes back: the fetcher and the throttle policy agree.

Before, a fetcher capped Retry-After at ``DUALPLANE_THROTTLE_COOLDOWN_CAP_MS`` while the policy
never went below it: a Retry-After of an hour rested one fetcher for 5 min and slowed the whole
fleet to one request an hour. Both now ask :func:`core.limits.cooldown_s`.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualplane.control_plane.fetcher import politeness
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.limits import cooldown_s
from dualplane.core.settings import LimitSettings, ThrottleSettings
from dualplane.data_plane.throttle.policy import PolicyConfig, decide
from dualplane.data_plane.throttle.signals import WindowCounts

pytestmark = pytest.mark.unit

retry_afters = st.one_of(st.none(), st.floats(min_value=0, max_value=86_400, allow_nan=False))
cooldowns = st.integers(min_value=1, max_value=600_000)


@given(retry_afters, cooldowns, cooldowns)
def test_the_cooldown_is_retry_after_or_the_base_and_never_above_the_cap(
    retry_after_s: float | None, base_ms: int, extra_ms: int
) -> None:
    cap_ms = base_ms + extra_ms
    seconds = cooldown_s(retry_after_s, base_ms, cap_ms)
    assert 0 < seconds <= cap_ms / 1000
    wanted = retry_after_s if retry_after_s else base_ms / 1000
    assert seconds == min(wanted, cap_ms / 1000)


@given(retry_afters, cooldowns, cooldowns)
def test_the_fetcher_and_the_policy_hold_a_domain_back_equally_long(
    retry_after_s: float | None, base_ms: int, extra_ms: int
) -> None:
    assert politeness.cooldown_s is cooldown_s  # the fetcher's runner asks politeness.cooldown_s
    throttle = ThrottleSettings(
        cooldown_base_ms=base_ms,
        cooldown_challenge_ms=base_ms,
        cooldown_cap_ms=base_ms + extra_ms,
        min_samples=5,
    )
    config = PolicyConfig.from_settings(throttle, LimitSettings())
    blocked = WindowCounts(total=10, blocked=5, max_retry_after_s=retry_after_s, span_s=10)
    decision = decide(blocked, config.initial_state(), config, now_s=1000.0, rng=random.Random(0))
    fetcher_hold_s = politeness.cooldown_s(retry_after_s, base_ms, base_ms + extra_ms)
    if retry_after_s:
        assert decision.state.hold_until_s == pytest.approx(1000.0 + fetcher_hold_s)
    else:
        assert decision.state.hold_until_s is None  # no Retry-After: no hold beyond the climb's wait


@pytest.mark.parametrize(
    ("outcome", "base_ms"),
    [("blocked_challenge", 1000), ("rate_limited", 1000), ("forbidden", 2000)],
)
def test_the_cooldown_without_retry_after_is_short_after_a_captcha_or_429_and_long_after_a_403(
    outcome: str, base_ms: int
) -> None:
    """At the limit a captcha is a probe one request too far: 1 s; a 403 may be a block: 2 s."""
    assert outcome in set(Outcome)  # core mirrors the fetcher's outcome values; a rename breaks here
    throttle = ThrottleSettings()
    assert throttle.cooldown_without_retry_after_ms(outcome) == base_ms
    assert cooldown_s(None, throttle.cooldown_without_retry_after_ms(outcome), throttle.cooldown_cap_ms) == (
        base_ms / 1000
    )


def test_a_cap_below_the_challenge_cooldown_is_refused_naming_both_variables() -> None:
    with pytest.raises(ValueError, match="COOLDOWN_CHALLENGE_MS"):
        ThrottleSettings(cooldown_base_ms=100, cooldown_challenge_ms=500, cooldown_cap_ms=200)
