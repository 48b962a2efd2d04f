"""A second visit with the first visit's validators: 304 for what did not change, 200 for what did.

The sample site changes between the visits (one time step of its ``Changes``, moved by the test's
clock), so it knows which pages changed. The first visit is a crawl (frontier and fetcher as
processes); the second is made of tasks carrying the validators kept on the first visit's raw pages,
as a monitor will make them. Checked from both sides: pages.raw and fetch.events, and the site's log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.messages import CrawlTask, JobSpec, Validators
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import Changes, SampleSite, SiteSpec
from tests.e2e.local_site import local_site_settings, running
from tests.support.clock import ManualClock
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

START_S = 1_800_000_000.0
PERIOD_S = 60.0
SITE = SiteSpec(seed=3, hosts=1, pages_per_host=40, latency_ms=2, changes=Changes(PERIOD_S, share=0.2))
JOB = "watch-shop"


@pytest.fixture
def private(control_plane: ControlPlaneFactory) -> Settings:
    return local_site_settings(control_plane, domain_concurrency=4, fetch_concurrency=16, delay_jitter=0)


@pytest.fixture
def pipeline(private: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    yield from running(private, tmp_path)


def _eventually(check: Callable[[], bool], timeout_s: float, what: str, pipeline: Pipeline) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{pipeline.logs()}"
        time.sleep(0.25)


def _revisit(settings: Settings, pages: dict[str, dict[str, Any]]) -> set[str]:
    """One task per page with the validators its raw page kept; their task ids."""
    tasks = [
        CrawlTask(
            job_id=JOB,
            trace_id="second-visit",
            url=url,
            domain=domain_of(url),
            depth=1,
            validators=Validators.from_headers(page["headers"]),
        )
        for url, page in pages.items()
    ]
    topology, connection = Topology(settings.queues), amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        for task in tasks:
            publish(channel, topology.tasks_exchange, task.priority, task)
    finally:
        connection.close()
    return {task.task_id for task in tasks}


def test_the_second_visit_gets_304_without_a_body_for_every_unchanged_page_and_200_for_the_changed(
    private: Settings, pipeline: Pipeline
) -> None:
    clock = ManualClock(START_S)
    with SampleSite(SITE, clock=clock) as site:
        pipeline.start("frontier")
        pipeline.start("fetcher")
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        JobProbe(private).submit(JobSpec(job_id=JOB, allowed_domains=(domain_of(site.seeds[0]),)), site.seeds)

        first: dict[str, dict[str, Any]] = {}

        def first_visit_done() -> bool:
            first.update({p["url"]: p for p in read_topic(private, private.topics.pages_raw)})
            return set(first) >= reachable

        _eventually(first_visit_done, 60, "the first visit", pipeline)
        clock.now_s += PERIOD_S  # one step: a share of the products changes
        second = _revisit(private, {url: first[url] for url in sorted(reachable)})

        def events() -> dict[str, dict[str, Any]]:
            return {
                e["url"]: e
                for e in read_topic(private, private.topics.fetch_events)
                if e["task_id"] in second
            }

        _eventually(lambda: len(events()) == len(second), 60, "the second visit", pipeline)
        changed = {canonicalize(url) for url in site.changed_pages(START_S, clock.now_s)}
        served = [entry.status for entry in site.log()]

    raw = {p["url"]: p for p in read_topic(private, private.topics.pages_raw) if p["task_id"] in second}
    outcomes = {url: event["outcome"] for url, event in events().items()}
    assert changed and changed < reachable
    assert {url for url, outcome in outcomes.items() if outcome == "ok"} == changed, pipeline.trouble()
    assert {url for url, outcome in outcomes.items() if outcome == "not_modified"} == reachable - changed
    assert all(event["conditional"] for event in events().values())
    assert set(raw) == reachable  # a 304 is on pages.raw too, with its headers
    for url in reachable - changed:
        assert (raw[url]["status"], raw[url]["body"], raw[url]["body_bytes"]) == (304, b"", 0)
        assert raw[url]["headers"]["etag"] == first[url]["headers"]["etag"]
    for url in changed:
        assert raw[url]["status"] == 200 and raw[url]["body"] != first[url]["body"]
    assert served.count(304) == len(reachable - changed)
