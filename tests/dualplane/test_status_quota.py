"""``status`` shows the fleet-wide pause a used-up scraping-API quota started, while it lasts, and the
day's credits against the budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from dualplane.cli.status_cmd import render
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle.snapshot import write_snapshot
from dualplane.status import credits_today, quota_pause

pytestmark = pytest.mark.unit

REASON = (
    "quota: the scraping API refused a fetch of shop.example for the account (credits used up or key refused)"
)


def _settings(tmp_path: Path, paused_until_s: float | None) -> Settings:
    path = tmp_path / "snapshot.json"
    quota = None if paused_until_s is None else {"paused_until_s": paused_until_s, "reason": REASON}
    write_snapshot(path, {"version": 1, "quota": quota, "domains": {}})
    base = Settings()
    return base.model_copy(update={"throttle": base.throttle.model_copy(update={"snapshot_path": str(path)})})


def test_a_pause_in_force_is_shown_with_its_time_left_and_how_to_lift_it(tmp_path: Path) -> None:
    settings = _settings(tmp_path, paused_until_s=1_000.0)

    quota = quota_pause(settings, now_s=400.0)

    assert quota == {"paused_for_s": 600.0, "reason": REASON}
    view = {
        "errors": {},
        "jobs": [],
        "queues": [],
        "permit_queues": 0,
        "lag": [],
        "throttled": [],
        "quota": quota,
    }
    console = Console(width=200, record=True)
    console.print(render(view))
    shown = " ".join(console.export_text().split())
    assert "scraping API quota: every domain paused for 600 s more" in shown
    assert "dualplane throttle clear '*'" in shown


def test_an_ended_pause_or_none_shows_nothing(tmp_path: Path) -> None:
    assert quota_pause(_settings(tmp_path, paused_until_s=1_000.0), now_s=1_000.5) is None
    assert quota_pause(_settings(tmp_path, paused_until_s=None), now_s=0.0) is None


def test_the_days_credits_are_shown_with_the_budget_and_what_is_left(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.json"
    credits = {"day": "2026-11-28", "used": 4880.0, "budget": 5000, "left": 120.0, "paused": False}
    write_snapshot(path, {"version": 1, "credits": credits, "domains": {}})
    base = Settings()
    settings = base.model_copy(
        update={"throttle": base.throttle.model_copy(update={"snapshot_path": str(path)})}
    )

    shown_credits = credits_today(settings)

    assert shown_credits == credits
    view = {"errors": {}, "jobs": [], "queues": [], "permit_queues": 0, "lag": [], "throttled": []}
    console = Console(width=200, record=True)
    console.print(render({**view, "credits": shown_credits}))
    assert (
        "scraping API credits today (2026-11-28 UTC): 4880 used of 5000 (120 left)" in console.export_text()
    )
    write_snapshot(path, {"version": 1, "credits": {**credits, "used": 0.0, "budget": None}, "domains": {}})
    assert credits_today(settings) is None  # nothing used and no budget: nothing to show
