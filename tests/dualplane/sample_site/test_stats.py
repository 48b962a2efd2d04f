"""The site's anti-bot window and traffic recorder, on a hand-driven clock."""

from __future__ import annotations

import pytest

from dualplane.sample_site import AntiBot, SampleSiteError
from dualplane.sample_site.antibot import RateGate
from dualplane.sample_site.stats import HostRecorder, LogEntry

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _entry(status: int = 200, blocked: str | None = None) -> LogEntry:
    return LogEntry(0.0, 0, "GET", "/", status, "ua", 1.0, blocked)  # type: ignore[arg-type]


def test_the_window_slides_so_a_client_that_backs_off_gets_through_again() -> None:
    clock, policy = Clock(), AntiBot(max_rps=2)
    gate = RateGate(clock)

    assert [gate.judge(policy) for _ in range(3)] == ["pass", "pass", "429"]
    clock.now += 0.5
    assert gate.judge(policy) == "429"  # blocked requests count too
    clock.now += 1.01
    assert gate.judge(policy) == "pass"
    assert gate.judge(None) == "pass"


def test_rates_below_one_per_second_widen_the_window() -> None:
    clock, policy = Clock(), AntiBot(max_rps=0.5, mode="captcha")
    gate = RateGate(clock)

    assert gate.judge(policy) == "pass"
    clock.now += 1.5
    assert gate.judge(policy) == "captcha"
    clock.now += 2.01
    assert gate.judge(policy) == "pass"


def test_recorder_counts_rates_histogram_and_concurrency() -> None:
    clock = Clock()
    recorder = HostRecorder(0, "http://127.0.0.1:8101", clock)
    for _ in range(3):
        recorder.started()
    for status in (200, 404):
        recorder.finished(_entry(status))
    clock.now += 5
    recorder.finished(_entry(200, "captcha"))

    stats = recorder.snapshot()
    assert stats.max_in_flight == 3 and stats.in_flight == 0
    assert stats.by_status == {"200": 2, "404": 1} and stats.challenges == 1
    assert stats.rate_1s == 1 and stats.rate_10s == pytest.approx(0.3)
    assert stats.histogram_60s[-1] == 1 and stats.histogram_60s[-6] == 2 and sum(stats.histogram_60s) == 3

    clock.now += 61
    assert recorder.snapshot().histogram_60s == [0] * 60 and recorder.snapshot().total_requests == 3
    recorder.reset()
    assert recorder.snapshot().total_requests == 0 and recorder.entries() == []


def test_invalid_policies_are_refused_with_the_reason() -> None:
    with pytest.raises(SampleSiteError, match="max_rps"):
        AntiBot(max_rps=0)
    with pytest.raises(SampleSiteError, match="mode"):
        AntiBot(max_rps=1, mode="block")  # type: ignore[arg-type]
