"""A domain's outstanding tasks sized by its pace: rate x transit, within [2, k x P_d] (unit)."""

from __future__ import annotations

import pytest

from dualplane.control_plane.frontier.slots import FLOOR, DomainSlots, paced_slots
from dualplane.core.limits import Limits

pytestmark = pytest.mark.unit


def slots(concurrency: int, delay_ms: int, transit_s: float = 10.0, jitter: float = 0.2) -> int:
    return paced_slots(
        concurrency=concurrency, delay_ms=delay_ms, per_slot=8, transit_s=transit_s, jitter=jitter
    )


def test_an_unpaced_domain_or_sizing_off_keeps_k_x_p_d() -> None:
    assert slots(8, 0) == 64
    assert slots(1, 0) == 8
    assert slots(8, 15_000, transit_s=0) == 64


def test_a_paced_domain_gets_its_rate_times_the_transit_time() -> None:
    # Crawl-delay 15 s at P_d 8: 8 / (15 x 1.1) = 0.485/s, x 10 s = 4.85 -> 5 (was 64)
    assert slots(8, 15_000) == 5
    # P_d 2 at 4 s without jitter: 0.5/s x 10 s = 5
    assert slots(2, 4_000, jitter=0) == 5
    # 3.3/s for 10 s: rounded up, never a task short of the pace
    assert slots(1, 300, jitter=0) == 8  # 34 capped at k x P_d = 8
    assert slots(4, 1_200, jitter=0) == 32  # 3.33/s x 10 = 33.3 -> 34, capped at 32


def test_the_shipped_defaults_are_not_cut() -> None:
    """P_d 2 with the 1 s minimum delay sends 1.8/s: 18 tasks in 10 s, above k x P_d = 16."""
    assert slots(2, 1_000) == 16


def test_a_very_slow_domain_keeps_the_floor_but_never_more_than_its_ceiling() -> None:
    assert slots(1, 60_000) == FLOOR  # one request a minute: 0.17 tasks, still two
    assert paced_slots(concurrency=1, delay_ms=60_000, per_slot=1, transit_s=10, jitter=0) == 1


def test_the_strictest_delay_paces_the_domain_and_a_crawl_delay_is_remembered_per_domain() -> None:
    sizer = DomainSlots(per_slot=8, transit_s=10, jitter=0, floor_delay_ms=100)
    fast = Limits(concurrency=8, delay_ms=0, paused=False)
    assert sizer.for_domain("a.test", fast) == 64  # 80/s at the 100 ms floor: capped
    sizer.saw("a.test", 10_000)  # robots.txt: Crawl-delay 10
    assert sizer.for_domain("a.test", fast) == 8  # 0.8/s x 10 s
    assert sizer.for_domain("b.test", fast) == 64  # another domain is not paced by it
    throttled = Limits(concurrency=1, delay_ms=20_000, paused=False, source="auto")
    assert sizer.for_domain("a.test", throttled) == FLOOR  # the throttle is stricter: 0.05/s
    sizer.saw("a.test", None)  # robots.txt no longer asks for a delay
    assert sizer.for_domain("a.test", fast) == 64
