"""Tasks a fetcher can never run are dead-lettered with the reason; the tasks beside them run.

A probe's finding: a task whose domain had no permit queue (a mismatched or ``file://`` domain,
published by hand) made ``basic.get`` close the fetcher's permit channel (404 NOT_FOUND); the
fetcher reconnected over and over, valid tasks beside it reached the delivery limit, and the job
never finished. The fetcher here is the real :class:`TaskRunner` with a plain HTTP GET as work.
A missing permit queue is retried (its report makes the frontier declare the queue again, see
``tests/control_plane/frontier/test_permit_queue_lost.py``): a task no frontier issued is
dead-lettered once its attempts are spent, here at once (``max_attempts=1``).
"""

from __future__ import annotations

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.dead_letters import DeadLetter, list_dead_letters
from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.brokers.amqp.publisher import publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from tests.control_plane.fetcher.test_obeys_throttle import Lanes, fetcher
from tests.support.factories import ControlPlaneFactory
from tests.support.recording_server import RecordingHost

pytestmark = [pytest.mark.integration]


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=0, fetch_concurrency=8),
            "fetch": FetchSettings(delay_jitter=0, permit_wait_s=0.5),
        }
    )


def _task(url: str, domain: str, max_attempts: int = 5) -> CrawlTask:
    return CrawlTask(
        job_id="poison", trace_id="t", url=url, domain=domain, depth=0, max_attempts=max_attempts
    )


def test_tasks_without_permits_or_with_a_foreign_domain_are_dead_lettered_and_others_run(
    settings: Settings,
) -> None:
    topology, lanes = Topology(settings.queues), Lanes(settings)
    with RecordingHost(latency_s=0.01) as host:
        domain = domain_of(host.base_url)
        lanes.permits(domain, 2)
        poison = [
            _task("http://no-permits.example/x", "no-permits.example", max_attempts=1),
            _task("file:///etc/passwd", "etc"),
            _task(f"{host.base_url}/foreign", "other.example"),  # another site's permits
        ]
        for task in [*poison, *[_task(f"{host.base_url}/ok/{i}", domain) for i in range(5)]]:
            publish(lanes.channel, topology.tasks_exchange, task.priority, task)
        letters: list[DeadLetter] = []
        with fetcher(settings):
            assert wait_for(lambda: sum(host.requests[f"/ok/{i}"] for i in range(5)) == 5, 30), host.requests

            def three() -> bool:
                nonlocal letters
                letters = list_dead_letters(lanes.connection.channel(), topology)
                return len(letters) == 3

            assert wait_for(three, 20), letters
        assert "/foreign" not in host.requests

    reasons = sorted(letter.reason for letter in letters)
    assert reasons[0].startswith("permit_queue_missing on attempt 1/1: attempts exhausted")
    assert reasons[1] == "the task's URL cannot be fetched: not an http(s) URL: 'file:///etc/passwd'"
    assert reasons[2] == f"the task's domain 'other.example' is not its URL's ({domain!r})"
    assert lanes.channel.queue_declare(topology.lane_queue("normal"), passive=True).method.message_count == 0
    lanes.close()
