"""A fetcher answers a broadcast cancel only once none of the job's fetches runs on it."""

from __future__ import annotations

import pytest

from dualplane.control_plane.fetcher.cancelling import FetcherCancels
from dualplane.core.jobs import NoCancels

pytestmark = pytest.mark.unit


def test_a_cancel_heard_with_nothing_running_is_answered_at_once() -> None:
    cancels = FetcherCancels(NoCancels())

    assert cancels.heard_cancel("j", ("reply", "c1")) == [("reply", "c1")]
    assert cancels.cancelled("j") and not cancels.cancelled("other")


def test_the_answer_waits_for_the_jobs_last_running_fetch() -> None:
    cancels = FetcherCancels(NoCancels())
    cancels.started("j")
    cancels.started("j")
    cancels.started("other")

    assert cancels.heard_cancel("j", ("reply", "c1")) == []
    assert cancels.ended("other") == []
    assert cancels.ended("j") == []
    assert cancels.ended("j") == [("reply", "c1")]


def test_a_new_connection_forgets_running_fetches_and_answers_owed() -> None:
    cancels = FetcherCancels(NoCancels())
    cancels.started("j")
    cancels.heard_cancel("j", ("reply", "c1"))

    cancels.reset()

    assert cancels.cancelled("j")  # still cancelled: the broadcast is not forgotten
    assert cancels.heard_cancel("j", ("reply", "c2")) == [("reply", "c2")]
