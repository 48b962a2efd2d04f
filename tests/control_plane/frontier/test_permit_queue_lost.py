"""A permit queue that disappears mid-crawl is declared again, and the crawl goes on (#27 P6).

The probe deleted a domain's permit queue through the management API mid-crawl (the broker's state
lost, the frontier's disk kept): the frontier trusted its stored ``declared_at`` for 6 days, the
fetchers dead-lettered 434 tasks within ~20 s and the job reported finished. Here: real RabbitMQ
and Kafka, a real frontier, a real fetcher (a plain HTTP GET as work) and a real HTTP host; the
queue is deleted with pika's ``queue_delete`` while the job runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from tests.control_plane.fetcher.test_obeys_throttle import fetcher
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier
from tests.support.recording_server import RecordingHost

pytestmark = [pytest.mark.integration]

PAGES = 40


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    made = control_plane.settings(retry_tiers="1s=1000,30s=30000,2m=120000")
    return made.model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=0, fetch_concurrency=8),
            "fetch": FetchSettings(delay_jitter=0, permit_wait_s=0.5),
        }
    )


@pytest.fixture
def frontier(settings: Settings) -> Iterator[RunningFrontier]:
    running = RunningFrontier(settings).start()
    yield running
    running.stop()


def test_a_permit_queue_deleted_mid_crawl_is_declared_again_and_no_task_is_lost(
    settings: Settings, frontier: RunningFrontier
) -> None:
    with RecordingHost(latency_s=0.1) as host:
        domain = domain_of(host.base_url)
        queue = frontier.topology.permits_queue(domain)
        urls = [f"{host.base_url}/page/{i}" for i in range(PAGES)]
        with fetcher(settings):
            frontier.submit(JobSpec(job_id="lost", obey_robots=False), urls)
            assert wait_for(lambda: len(host.requests) >= 5, 30), host.requests

            connection = amqp.connect(settings.amqp)
            try:
                connection.channel().queue_delete(queue)
            finally:
                connection.close()
            fetched_when_deleted = len(host.requests)
            assert fetched_when_deleted < PAGES, "the crawl ended before the queue was deleted"

            progress = frontier.wait_progress("lost", timeout_s=90, done=PAGES, dead_lettered=0, failed=0)

    assert progress["queued"] == 0 and progress["retrying"] == 0
    assert all(host.requests[f"/page/{i}"] >= 1 for i in range(PAGES))
    # Declared again with the domain's P_d, every permit back once the fetcher let go of them.
    assert wait_for(lambda: frontier.queue_depth(queue) == 2, 10), frontier.queue_depth(queue)
