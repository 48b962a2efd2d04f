"""A slow robots.txt holds up only its own site's URLs, never the rest of its frontier shard (#27 P2).

Real RabbitMQ and Kafka, a real frontier, and two real sites on loopback: one whose robots.txt
trickles its head a byte every half second for 40 s, one that answers at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import Settings
from tests.control_plane.frontier.test_robots_guard import http_server, trickling_server
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier

pytestmark = pytest.mark.integration

ROBOTS_TIMEOUT_S = 15.0


@pytest.fixture
def settings_on_loopback(control_plane: ControlPlaneFactory) -> Settings:
    settings = control_plane.settings()
    return settings.model_copy(
        update={
            "fetch": settings.fetch.model_copy(update={"allow_hosts": "127.0.0.1"}),
            "frontier": settings.frontier.model_copy(update={"robots_timeout_s": ROBOTS_TIMEOUT_S}),
        }
    )


@pytest.fixture
def running(settings_on_loopback: Settings) -> Iterator[RunningFrontier]:
    frontier = RunningFrontier(settings_on_loopback).start()
    try:
        yield frontier
    finally:
        frontier.stop()


def test_a_trickling_robots_txt_does_not_hold_up_the_other_sites_of_its_shard(
    running: RunningFrontier,
) -> None:
    with (
        trickling_server(seconds_per_byte=0.5, for_s=40) as slow,
        http_server("127.0.0.1", (404, {}, b"")) as (fast, fast_asked),
    ):
        running.submit(JobSpec(job_id="slow-site"), [f"{slow}/a"])
        time.sleep(1)  # the slow site's robots.txt is being fetched when the other job arrives
        started = time.monotonic()
        running.submit(JobSpec(job_id="fast-site"), [f"{fast}/a", f"{fast}/b"])

        running.wait_progress("fast-site", timeout_s=10, discovered=2, queued=2)
        took_s = time.monotonic() - started
        waiting = running.progress("slow-site")

        assert fast_asked == ["/robots.txt"]
        assert took_s < 10
        assert waiting.get("robots_waiting") == 1, waiting
        assert waiting.get("idle") is False, "a job whose URLs wait for robots.txt is not idle"

        # The slow site's robots.txt is unreachable at the deadline: its URL keeps waiting while the
        # file is asked again (RFC 9309 allows retries), and the job says so; it is not "disallowed".
        running.wait_progress(
            "slow-site", timeout_s=ROBOTS_TIMEOUT_S + 15, robots_retrying=1, robots_waiting=1
        )
        assert running.progress("slow-site").get("disallowed") == 0
