"""Pure parts of obeying throttle commands: permit debt, delay choice, the fetcher's domain gate."""

from __future__ import annotations

import random

import pytest

from dualplane.brokers.amqp.permits import PermitLedger
from dualplane.control_plane.fetcher.politeness import (
    DomainGate,
    cooldown_s,
    cooling_wait_s,
    delay_ms,
    hold_s,
    permit_wait_s,
    release_in_s,
)
from dualplane.data_plane.throttle.rates import Pace

pytestmark = pytest.mark.unit


# -- the frontier's permit ledger ----------------------------------------------------------------


def test_raising_p_d_adds_the_difference() -> None:
    ledger, to_add = PermitLedger(2).retarget(5)
    assert (ledger, to_add) == (PermitLedger(5, 0), 3)


def test_lowering_p_d_turns_the_surplus_into_debt_paid_as_permits_come_back() -> None:
    ledger, to_add = PermitLedger(5).retarget(1)
    assert (ledger, to_add, ledger.existing) == (PermitLedger(1, 4), 0, 5)
    ledger = ledger.paid(2)  # two were free: destroyed at once
    assert ledger == PermitLedger(1, 2)
    ledger = ledger.paid(0)  # nothing came back yet
    ledger = ledger.paid(2)  # the held ones came back and were destroyed
    assert ledger == PermitLedger(1, 0)


def test_a_raise_cancels_debt_before_adding_permits() -> None:
    indebted = PermitLedger(1, 3)  # 4 permits exist
    assert indebted.retarget(3) == (PermitLedger(3, 1), 0)
    assert indebted.retarget(4) == (PermitLedger(4, 0), 0)
    assert indebted.retarget(6) == (PermitLedger(6, 0), 2)


def test_the_ledger_refuses_impossible_moves() -> None:
    with pytest.raises(ValueError, match="debt of 1"):
        PermitLedger(1, 1).paid(2)
    with pytest.raises(ValueError, match=">= 0"):
        PermitLedger(1).retarget(-1)


# -- delays ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("throttle_ms", "crawl_delay_ms", "floor_ms", "expected"),
    [
        (500, None, 0, 500),  # the throttle's delay
        (500, 2000, 0, 2000),  # robots.txt is stricter
        (100, None, 1000, 1000),  # no command undercuts the configured minimum
        (4000, 2000, 1000, 4000),
    ],
)
def test_delay_is_the_strictest_of_throttle_robots_and_minimum(
    throttle_ms: int, crawl_delay_ms: int | None, floor_ms: int, expected: int
) -> None:
    assert delay_ms(throttle_ms, crawl_delay_ms, floor_ms) == expected


def test_hold_is_the_delay_stretched_by_jitter_never_shortened() -> None:
    rng = random.Random(7)
    holds = [hold_s(1000, 0.5, rng) for _ in range(200)]
    assert min(holds) >= 1.0 and max(holds) <= 1.5
    assert len({round(h, 3) for h in holds}) > 100  # not periodic
    assert hold_s(1000, 0.0, rng) == 1.0


def test_a_permit_goes_back_its_hold_after_the_request_started_not_after_it_ended() -> None:
    """Start to start: a request of 20 ms plus 60 ms of the fleet's own work under a 200 ms delay
    leaves the permit held 120 ms more, so the slot's next request starts 200 ms after this one."""
    assert release_in_s(started_s=10.0, now_s=10.08, hold_s=0.2) == pytest.approx(0.12)
    # Slower than its delay: back at once (never a negative wait), as Crawl-delay is read.
    assert release_in_s(started_s=10.0, now_s=10.5, hold_s=0.2) == 0.0
    # A cooldown counts from the answer that asked for it, whichever is longer wins.
    assert release_in_s(started_s=10.0, now_s=10.08, hold_s=0.2, at_least_s=1.0) == 1.0
    assert release_in_s(started_s=10.0, now_s=10.08, hold_s=5.0, at_least_s=1.0) == pytest.approx(4.92)


def test_slots_paced_start_to_start_send_the_rate_set_whatever_their_own_time() -> None:
    """The processor's map from a rate to P_d and a delay, against a slot that paces as the runner
    does: the rate sent is the rate set, with 20 ms or 60 ms of request and fleet time per slot."""
    rng = random.Random(3)
    for rate_rps in (2.0, 4.5, 18.0):
        concurrency, delay = Pace(latency_ms=20, jitter=0.2).limits(rate_rps, ceiling=8, base_delay_ms=0)
        assert delay >= 20 + 50, (rate_rps, concurrency, delay)  # room for the fleet's own work
        for busy_s in (0.02, 0.06):
            now, sent = 0.0, 0
            while now < 100.0:  # one slot for 100 s: request, then wait for its permit to come back
                now += busy_s + release_in_s(now, now + busy_s, hold_s(delay, 0.2, rng))
                sent += 1
            assert concurrency * sent / 100.0 == pytest.approx(rate_rps, rel=0.03), (rate_rps, busy_s)


def test_cooldown_honours_retry_after_within_the_cap() -> None:
    assert cooldown_s(30.0, 2000, 300_000) == 30.0
    assert cooldown_s(None, 2000, 300_000) == 2.0  # no Retry-After: the base cooldown
    assert cooldown_s(0.0, 2000, 300_000) == 2.0
    assert cooldown_s(3600.0, 2000, 300_000) == 300.0


# -- the fetcher's gate ------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_gate_caps_held_requests_per_domain_at_the_current_concurrency() -> None:
    gate = DomainGate()
    assert gate.check("a.test", 2, False) == "go"
    gate.acquired("a.test")
    gate.acquired("a.test")
    assert gate.check("a.test", 2, False) == "wait"
    assert gate.check("a.test", 3, False) == "go"  # a raise applies at once
    assert gate.check("a.test", 1, False) == "wait"  # and so does a cut
    assert gate.check("b.test", 1, False) == "go"  # per domain
    gate.released("a.test")
    assert gate.check("a.test", 2, False) == "go"


def test_gate_defers_paused_domains_whatever_they_hold() -> None:
    assert DomainGate().check("a.test", 8, True) == "defer"


def test_gate_cooldown_blocks_until_it_runs_out_and_only_extends() -> None:
    clock = Clock()
    gate = DomainGate(clock)
    gate.cool("a.test", 30)
    gate.cool("a.test", 5)  # a shorter one does not cut the longer one short
    clock.now += 29
    assert gate.check("a.test", 2, False) == "wait"
    assert gate.cooling_s("a.test") == pytest.approx(1.0)
    clock.now += 1.5
    assert gate.check("a.test", 2, False) == "go"


def test_gate_reset_forgets_held_requests_but_not_cooldowns() -> None:
    clock = Clock()
    gate = DomainGate(clock)
    gate.acquired("a.test")
    gate.cool("b.test", 10)
    gate.reset()
    gate.released("a.test")  # a late release after the reset must not go negative
    assert gate.held["a.test"] == 0
    assert gate.check("a.test", 1, False) == "go"
    assert gate.check("b.test", 1, False) == "wait"


@pytest.mark.parametrize(
    ("delay_ms", "concurrency", "queued", "expected_s"),
    [
        (20, 4, 0, 0.5),  # a fast domain: the configured wait
        (500, 1, 7, 8 * 0.5 * 1.1),  # 8th in line for one permit held ~550 ms: its turn comes in 4.4 s
        (500, 2, 7, 8 * 0.5 * 1.1 / 2),
        (60_000, 1, 9, 60.0),  # capped: a domain slowed to a crawl lets its tasks go round a tier
    ],
)
def test_a_task_waits_for_its_turn_at_a_throttled_domains_pace(
    delay_ms: int, concurrency: int, queued: int, expected_s: float
) -> None:
    assert permit_wait_s(0.5, delay_ms, concurrency, queued, jitter=0.2) == pytest.approx(expected_s)


def test_a_task_waits_out_a_short_cooldown_and_lets_a_long_one_send_it_round_a_tier() -> None:
    assert cooling_wait_s(1.0) == 2.0  # Retry-After 1 s: it waits (it used to go round the 5 s tier)
    assert cooling_wait_s(300.0) == 0.0  # a long rest: not held in memory for it
