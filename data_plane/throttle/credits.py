"""The scraping API's credits against a daily budget: counted per UTC day; spent, every domain pauses.

Each fetch event carries what the managed scraping API charged for it (``api_credits``: its
``Ant-Credits-Cost`` header, else its documented price; see
:mod:`control_plane.fetcher.backends.scraping_api`). The processor adds them per UTC day over the
domains it owns (:class:`CreditBook`, recounted from the durable ``daily`` table after a
rebalance). Once ``DUALPLANE_THROTTLE_DAILY_CREDITS`` are used, one command pauses every domain
(:func:`budget_pause`, domain ``*``, source ``quota`` like the API's own "credits used up") until
the UTC day ends, or until an operator who raised the budget clears ``*``
(``dualplane throttle clear '*'``). ``dualplane status`` shows the day's credits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from dualplane.core.clock import utc_now
from dualplane.core.settings import LimitSettings
from dualplane.data_plane.throttle.commands import ThrottleCommand
from dualplane.data_plane.throttle.quota import fleet_pause

DAY_S = 86_400


def day_of(epoch_s: float) -> int:
    """The UTC day number of ``epoch_s`` (days since 1970-01-01)."""
    return int(epoch_s // DAY_S)


@dataclass
class CreditBook:
    """Credits used per UTC day as this worker counted them, against ``daily_credits`` (0: no budget)."""

    daily_credits: int
    used: dict[int, float] = field(default_factory=dict)
    paused_day: int | None = None  # the budget of that day is spent and its pause issued

    def add(self, day: int, credits: float) -> float:
        """Count ``credits`` on ``day``; the day's total."""
        if credits:
            self.used[day] = self.used.get(day, 0.0) + credits
        return self.used.get(day, 0.0)

    def newly_spent(self, day: int) -> bool:
        """The budget of ``day`` is used up and its pause not issued yet (at most one a day: an
        operator who clears it keeps the fleet running)."""
        spent = self.daily_credits > 0 and self.used.get(day, 0.0) >= self.daily_credits
        return spent and self.paused_day != day

    def view(self, now_s: float) -> dict[str, Any]:
        """Today's credits for the snapshot and ``status``: used, the budget and what is left of it."""
        day = day_of(now_s)
        used = round(self.used.get(day, 0.0), 3)
        budget = self.daily_credits or None
        return {
            "day": datetime.fromtimestamp(day * DAY_S, UTC).date().isoformat(),
            "used": used,
            "budget": budget,
            "left": round(max(0.0, budget - used), 3) if budget else None,
            "paused": self.paused_day == day,
        }


def budget_pause(
    day: int, used: float, budget: int, limits: LimitSettings, issued_at: datetime | None = None
) -> ThrottleCommand:
    """The command pausing every domain until the end of UTC ``day``, whose budget is spent."""
    issued = issued_at or utc_now()
    left_s = max(1, int((day + 1) * DAY_S - issued.timestamp()))
    reason = (
        f"budget: {used:g} of {budget} scraping-API credits used today (UTC); every domain paused "
        f"for {left_s} s, until the day ends or an operator who raised the budget clears '*'"
    )
    return fleet_pause(reason, left_s, limits, issued)
