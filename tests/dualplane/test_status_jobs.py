"""``status`` shows each job in the state :class:`FinishRule` gives it: it decides nothing itself."""

from __future__ import annotations

import pytest

from dualplane.control_plane.frontier.jobs import STALLED_AFTER_S
from dualplane.core.settings import Settings
from dualplane.status import job_detail

pytestmark = pytest.mark.unit

BUSY = {"job_id": "j", "idle": False, "done": 2, "outstanding": 3, "backlog": 0, "changed_at": 1000.0}
DONE = {**BUSY, "idle": True, "outstanding": 0}


@pytest.mark.parametrize(
    ("snapshot", "now_s", "state"),
    [
        (BUSY, 1000.0 + STALLED_AFTER_S, "running"),
        (BUSY, 1001.0 + STALLED_AFTER_S, "stalled"),
        (DONE, 1001.0 + STALLED_AFTER_S, "finished"),  # quiet and finished is not stalled
    ],
)
def test_a_jobs_state_is_the_finish_rules(snapshot: dict[str, object], now_s: float, state: str) -> None:
    assert job_detail(Settings(), snapshot, 0, now_s)["state"] == state
