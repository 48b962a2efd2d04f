"""A task waiting out a retry delay in a tier does not hold one of its domain's k x P_d slots.

Held, a domain throttled to P_d 1 (8 slots at k = 8) whose site answered eight captchas had
nothing to fetch for the two minutes of the tasks' retry tier, while the site allowed 5/s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.control_plane.frontier.store import FrontierState

pytestmark = pytest.mark.unit


def in_slots(state: FrontierState, domain: str) -> int:
    return state.domain(domain)[0] - state.retrying(domain)


def test_a_retrying_task_frees_its_slot_until_it_starts_again_and_the_count_survives_the_changelog(
    tmp_path: Path,
) -> None:
    state = FrontierState(tmp_path / "a.sqlite")
    state.save_job(JobSpec(job_id="j"))
    for task in ("t1", "t2", "t3"):
        state.task_issued(task, "j", "a.test")
        state.task_reported(task, "j", "a.test", "started")
    state.task_reported("t1", "j", "a.test", "retrying")
    state.task_reported("t2", "j", "a.test", "retrying")
    state.task_reported("t2", "j", "a.test", "retrying")  # a redelivered report counts once
    assert (state.domain("a.test")[0], state.retrying("a.test"), in_slots(state, "a.test")) == (3, 2, 1)
    assert state.total_outstanding() == 3  # still not final: D_max and the job's progress count it

    state.task_reported("t1", "j", "a.test", "started")  # back from its tier: it holds a slot again
    state.task_reported("t2", "j", "a.test", "dead_lettered")  # final straight from the tier
    assert (state.domain("a.test")[0], state.retrying("a.test"), in_slots(state, "a.test")) == (2, 0, 2)

    state.task_reported("t3", "j", "a.test", "retrying")
    changes = state.changes()
    state.commit()
    restored = FrontierState(tmp_path / "b.sqlite")  # a standby, from the changelog alone
    for name, row in changes:
        restored.apply(name, row)
    restored.restored()
    assert (restored.domain("a.test")[0], restored.retrying("a.test")) == (2, 1)

    assert state.cancel_job("j", at=1.0)  # the retrying task is cancelled with the rest
    assert (state.domain("a.test")[0], state.retrying("a.test")) == (0, 0)
