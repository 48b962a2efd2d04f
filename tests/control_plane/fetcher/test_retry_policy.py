"""The retry policy table: backoff growth and cap, Retry-After, long tiers, give up and dead letters."""

from __future__ import annotations

import random

import pytest

from dualplane.control_plane.fetcher.retry_policy import DEFAULT_TIERS, RULES, DelayTiers, Outcome, decide

pytestmark = pytest.mark.unit

RETRYABLE = [outcome for outcome, rule in RULES.items() if rule.retry and rule.attempt]
DEFERRED = [outcome for outcome, rule in RULES.items() if not rule.attempt]
NON_RETRYABLE = [
    Outcome.NOT_FOUND,
    Outcome.ROBOTS_DISALLOWED,
    Outcome.PARSE_ERROR,
    Outcome.TOO_LARGE,
    Outcome.INVALID_CONTENT,
]


class FixedJitter(random.Random):
    """A Random whose uniform() always lands at the same fraction of its range."""

    def __init__(self, fraction: float) -> None:
        super().__init__(0)
        self.fraction = fraction

    def random(self) -> float:
        return self.fraction


def test_every_outcome_has_a_rule() -> None:
    assert set(RULES) == set(Outcome)
    assert set(RETRYABLE) == {
        Outcome.TIMEOUT,
        Outcome.CONNECTION_ERROR,
        Outcome.SERVER_ERROR,
        Outcome.RATE_LIMITED,
        Outcome.FORBIDDEN,
        Outcome.BLOCKED_CHALLENGE,
        Outcome.PERMIT_QUEUE_MISSING,  # the frontier declares the queue again when the retry is reported
    }
    assert set(DEFERRED) == {Outcome.QUOTA_EXHAUSTED, Outcome.API_BUSY}  # the backend's, not the task's


def test_tier_for_picks_the_smallest_tier_that_covers_the_delay() -> None:
    assert DEFAULT_TIERS.names == ("5s", "30s", "2m", "10m")
    assert DEFAULT_TIERS.tier_for(0.1) == "5s"
    assert DEFAULT_TIERS.tier_for(5) == "5s"
    assert DEFAULT_TIERS.tier_for(5.01) == "30s"
    assert DEFAULT_TIERS.tier_for(120) == "2m"
    assert DEFAULT_TIERS.tier_for(3600) == "10m"


def test_tiers_must_increase() -> None:
    with pytest.raises(ValueError, match="increasing"):
        DelayTiers((("slow", 60000), ("fast", 1000)))


@pytest.mark.parametrize("outcome", [Outcome.OK, Outcome.REDIRECT])
def test_success_is_done(outcome: Outcome) -> None:
    decision = decide(outcome, attempt=1, max_attempts=5)

    assert (decision.action, decision.tier, decision.delay_s) == ("done", None, 0.0)


@pytest.mark.parametrize("outcome", NON_RETRYABLE)
def test_non_retryable_failures_give_up_at_once(outcome: Outcome) -> None:
    decision = decide(outcome, attempt=1, max_attempts=5)

    assert decision.action == "give_up"
    assert decision.tier is None
    assert decision.reason.startswith(f"{outcome} on attempt 1/5: not retried")


@pytest.mark.parametrize("outcome", RETRYABLE)
def test_exhausted_attempts_are_dead_lettered(outcome: Outcome) -> None:
    decision = decide(outcome, attempt=5, max_attempts=5)

    assert decision.action == "dead_letter"
    assert "attempts exhausted" in decision.reason


@pytest.mark.parametrize("outcome", RETRYABLE)
@pytest.mark.parametrize("fraction", [0.0, 0.5, 0.999])
def test_delays_grow_with_attempt_and_never_exceed_the_cap(outcome: Outcome, fraction: float) -> None:
    delays = [
        decide(outcome, attempt=attempt, max_attempts=20, rng=FixedJitter(fraction)).delay_s
        for attempt in range(1, 20)
    ]

    assert delays == sorted(delays)
    assert delays[-1] >= DEFAULT_TIERS.max_delay_s / 2  # the cap is reached, then jittered
    assert all(0 < delay <= DEFAULT_TIERS.max_delay_s for delay in delays)


def test_jitter_stays_between_half_and_full_backoff() -> None:
    rng = random.Random(1)
    delays = [decide(Outcome.SERVER_ERROR, attempt=3, max_attempts=5, rng=rng).delay_s for _ in range(500)]

    assert min(delays) >= 10.0  # base 5 s * 2**2 * 0.5
    assert max(delays) <= 20.0
    assert max(delays) - min(delays) > 5  # actually spread out


def test_the_chosen_tier_always_covers_the_delay() -> None:
    rng = random.Random(2)
    for outcome in RETRYABLE:
        for attempt in range(1, 10):
            decision = decide(outcome, attempt=attempt, max_attempts=10, rng=rng)
            assert decision.tier is not None
            assert DEFAULT_TIERS.ttl_ms(decision.tier) >= decision.delay_s * 1000


def test_retry_after_is_honoured_when_longer_than_the_backoff() -> None:
    decision = decide(Outcome.RATE_LIMITED, attempt=1, max_attempts=5, retry_after_s=90, rng=FixedJitter(0))

    assert decision.delay_s == 90
    assert decision.tier == "2m"
    assert decision.cool_down_domain


def test_backoff_wins_when_retry_after_is_shorter() -> None:
    decision = decide(Outcome.RATE_LIMITED, attempt=3, max_attempts=5, retry_after_s=1, rng=FixedJitter(0))

    assert decision.delay_s == 60  # base 30 s * 2**2 * 0.5


def test_retry_after_beyond_the_largest_tier_is_capped_and_said_so() -> None:
    decision = decide(Outcome.RATE_LIMITED, attempt=1, max_attempts=5, retry_after_s=7200)

    assert decision.delay_s == DEFAULT_TIERS.max_delay_s
    assert "Retry-After 7200 s capped" in decision.reason


def test_retry_after_is_ignored_for_other_outcomes() -> None:
    decision = decide(Outcome.TIMEOUT, attempt=1, max_attempts=5, retry_after_s=500, rng=FixedJitter(0))

    assert decision.delay_s == 2.5


@pytest.mark.parametrize("outcome", [Outcome.FORBIDDEN, Outcome.BLOCKED_CHALLENGE])
def test_blocks_only_use_the_long_tiers_and_cool_the_domain_down(outcome: Outcome) -> None:
    rng = random.Random(3)
    for attempt in range(1, 6):
        decision = decide(outcome, attempt=attempt, max_attempts=6, rng=rng)
        assert decision.action == "retry"
        assert decision.tier in {"2m", "10m"}
        assert decision.delay_s >= 120
        assert decision.cool_down_domain


def test_transient_errors_do_not_cool_the_domain_down() -> None:
    for outcome in (Outcome.TIMEOUT, Outcome.CONNECTION_ERROR, Outcome.SERVER_ERROR):
        assert not decide(outcome, attempt=1, max_attempts=5).cool_down_domain


def test_reason_reads_like_a_log_line() -> None:
    decision = decide(Outcome.SERVER_ERROR, attempt=2, max_attempts=5, rng=FixedJitter(0.999))

    assert decision.reason == "server_error on attempt 2/5: retry in ~10 s via tier 30s"


def test_custom_tiers_cap_the_backoff() -> None:
    tiers = DelayTiers((("1s", 1000), ("10s", 10000)))
    decision = decide(Outcome.FORBIDDEN, attempt=1, max_attempts=3, tiers=tiers)

    assert (decision.delay_s, decision.tier) == (10.0, "10s")


def test_attempt_numbers_start_at_one() -> None:
    with pytest.raises(ValueError, match="attempt"):
        decide(Outcome.TIMEOUT, attempt=0, max_attempts=5)


@pytest.mark.parametrize("outcome", DEFERRED)
@pytest.mark.parametrize("attempt", [1, 4, 5, 50])
def test_a_backend_quota_defers_the_task_and_never_dead_letters_it(outcome: Outcome, attempt: int) -> None:
    decision = decide(outcome, attempt=attempt, max_attempts=5, rng=random.Random(0))
    assert decision.action == "defer"
    assert (
        decision.tier is not None
        and DEFAULT_TIERS.ttl_ms(decision.tier) >= RULES[outcome].base_delay_s * 1000
    )
    assert not decision.cool_down_domain, "the API's budget says nothing about the site"
