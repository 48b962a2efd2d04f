"""The scraping API's credits against a daily budget: counted per UTC day, spent once a day pauses all."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from dualplane.core.settings import LimitSettings, ThrottleSettings
from dualplane.data_plane.throttle.commands import ALL_DOMAINS, ThrottleCommand
from dualplane.data_plane.throttle.credits import DAY_S, CreditBook, budget_pause, day_of
from dualplane.data_plane.throttle.processor import ThrottleProcessor
from dualplane.data_plane.throttle.quota import QUOTA

pytestmark = pytest.mark.unit

NOON = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
DAY = day_of(NOON.timestamp())


def test_credits_add_up_per_utc_day_and_the_budget_is_spent_once_a_day() -> None:
    book = CreditBook(daily_credits=25)
    assert [book.add(DAY, 10.0), book.add(DAY, 10.0), book.add(DAY + 1, 1.0)] == [10.0, 20.0, 1.0]
    assert not book.newly_spent(DAY)
    book.add(DAY, 10.0)
    assert book.newly_spent(DAY)
    book.paused_day = DAY  # its pause issued: an operator who clears it keeps the fleet running
    assert not book.newly_spent(DAY)
    assert not CreditBook(daily_credits=0, used={DAY: 1e9}).newly_spent(DAY)  # no budget, no pause


def test_the_view_says_used_budget_and_left_for_the_day() -> None:
    book = CreditBook(daily_credits=100, used={DAY: 30.0, DAY - 1: 99.0})
    assert book.view(NOON.timestamp()) == {
        "day": "2026-11-28", "used": 30.0, "budget": 100, "left": 70.0, "paused": False,
    }  # fmt: skip
    assert CreditBook(0, {DAY: 3.0}).view(NOON.timestamp())["left"] is None


def test_a_spent_budget_pauses_every_domain_until_the_utc_day_ends() -> None:
    command = budget_pause(DAY, 101.0, 100, LimitSettings(), issued_at=NOON)
    assert (command.domain, command.paused, command.source) == (ALL_DOMAINS, True, QUOTA)
    assert command.ttl_s == DAY_S // 2  # noon to midnight
    assert command.reason.startswith("budget: 101 of 100 scraping-API credits used today (UTC)")


def test_the_processor_pauses_once_when_the_days_credits_reach_the_budget() -> None:
    # The processor stamps its command with the real clock, so the day spent is today's: a fixed
    # date made this test fail once that day had passed (the pause is then 1 s, not until midnight).
    today = day_of(time.time())
    issued: list[ThrottleCommand] = []

    async def issue(command: ThrottleCommand) -> None:
        issued.append(command)

    processor = SimpleNamespace(  # the attributes _pause_for_budget reads: no Faust app needed
        credits=CreditBook(daily_credits=5, used={today: 5.0}), quota_paused_until_s=0.0, quota={},
        config=ThrottleSettings(daily_credits=5), settings=SimpleNamespace(limits=LimitSettings()),
        _issue=issue,
    )  # fmt: skip
    asyncio.run(ThrottleProcessor._pause_for_budget(processor, today))  # type: ignore[arg-type]
    assert [c.domain for c in issued] == ["*"]
    assert processor.credits.paused_day == today and not processor.credits.newly_spent(today)
    midnight = (today + 1) * DAY_S
    assert processor.quota_paused_until_s == pytest.approx(midnight, abs=2)
    assert processor.quota["reason"].startswith("budget: 5 of 5")
