"""The report's failing-domains table counts failures by the fetcher's own rule (:func:`is_success`)."""

from __future__ import annotations

import pytest

from dualplane.control_plane.fetcher.retry_policy import Outcome, is_success
from dualplane.report.page import domain_tables

pytestmark = pytest.mark.unit


def _event(domain: str, outcome: str) -> dict[str, object]:
    return {"domain": domain, "outcome": outcome, "latency_ms": 10}


def test_a_revisit_answered_304_is_no_failure() -> None:
    events = [_event("shop.example", "not_modified")] * 9 + [_event("shop.example", "ok")]
    events += [_event("bad.example", "not_found"), _event("bad.example", "ok")]

    _, failing = domain_tables(events)

    assert failing == [["bad.example", 2, 1, "50%"]]


def test_success_is_the_retry_policys_answer() -> None:
    assert {outcome.value for outcome in Outcome if is_success(outcome.value)} == {
        "ok",
        "not_modified",
        "redirect",
    }
    assert not is_success("an outcome from a newer fetcher")
