"""A monitor's second visit, against the real brokers: bodies only for what changed, a change event
for exactly the pages that changed.

The sample site changes between the visits (one time step of its ``Changes``, moved by the test's
clock), so it knows which pages changed (``/_changes`` in-process: ``SampleSite.changed_pages``).
The first visit is the monitor's crawl job; the second is asked for with ``monitor visit`` (its
pages are then all due), and goes through the frontier's schedule: tasks with the validators the
first visit's reports brought back. Frontier, fetcher and extractor run as processes.

``DUALPLANE_TEST_MONITOR_PAGES`` sets the products per host (3 hosts); the default keeps the test
short on a shared CI machine, docs/monitors.md gives the run at 1,000+ pages.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dualplane.brokers.amqp.messages import MonitorSpec, visit_job_id
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.control_plane.frontier.client import JobClient
from dualplane.control_plane.frontier.monitor_client import MonitorClient
from dualplane.core.settings import Settings
from dualplane.core.web.urls import canonicalize
from dualplane.data_plane.extractor.change_reader import decode_change
from dualplane.sample_site import Changes, SampleSite, SiteSpec
from tests.e2e.local_site import finished, local_site_settings, running
from tests.support.clock import ManualClock
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import fresh_monitor
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

START_S = 1_800_000_000.0
PERIOD_S = 60.0
PAGES_PER_HOST = int(os.environ.get("DUALPLANE_TEST_MONITOR_PAGES", "60"))
SITE = SiteSpec(
    seed=3, hosts=3, pages_per_host=PAGES_PER_HOST, latency_ms=0, changes=Changes(PERIOD_S, share=0.1)
)
MONITOR = "watch"


@pytest.fixture
def private(control_plane: ControlPlaneFactory) -> Settings:
    return local_site_settings(control_plane, domain_concurrency=8, fetch_concurrency=32, delay_jitter=0)


@pytest.fixture
def pipeline(private: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    yield from running(private, tmp_path)


def test_the_second_visit_fetches_only_changed_pages_whole_and_emits_their_change_events(
    private: Settings, pipeline: Pipeline
) -> None:
    clock = ManualClock(START_S)
    started = time.monotonic()
    with SampleSite(SITE, clock=clock) as site:
        for service in ("frontier", "fetcher", "extractor"):
            pipeline.start(service)
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        job = JobClient(private).spec(visit_job_id(MONITOR, 1), site.seeds, monitor=MONITOR)
        spec = MonitorSpec(
            monitor_id=MONITOR, job=job, interval_s=3600, min_interval_s=600, max_interval_s=86_400
        )
        client = MonitorClient(private)
        seeds = client.create(spec, site.seeds)
        first = finished(private, job.job_id, pipeline, seeds)

        clock.now_s += PERIOD_S  # one step: a tenth of the products change, and the pages showing them
        second_job = client.visit(MONITOR)
        second = finished(private, second_job, pipeline)
        changed = {canonicalize(url) for url in site.changed_pages(START_S, clock.now_s)}
        monitor = fresh_monitor(client, MONITOR)
    took_s = time.monotonic() - started

    all_events = read_topic(private, private.topics.fetch_events)
    first_ok = {e["url"] for e in all_events if e["job_id"] == job.job_id and e["outcome"] == "ok"}
    events = [e for e in all_events if e["job_id"] == second_job]
    others = {e["url"]: e["outcome"] for e in events if e["outcome"] not in ("ok", "not_modified")}
    whole = {e["url"] for e in events if e["outcome"] == "ok"}
    unchanged = {e["url"] for e in events if e["outcome"] == "not_modified"}
    change_events = [decode_change(m.value() or b"") for m in _read_raw(private, private.topics.changes)]
    changed_urls = {e.canonical_url for e in change_events if e.job_id == second_job and e.kind == "changed"}
    # A redirect leaves the schedule on the first visit (its target, discovered, takes its place); a
    # broken link (404) is asked again once, then leaves it too (DUALPLANE_FRONTIER_MONITOR_GONE_AFTER=2).
    first_outcomes = Counter(e["outcome"] for e in all_events if e["job_id"] == job.job_id)
    redirects, broken = first_outcomes["redirect"], first_outcomes["not_found"]
    gone = {(e.kind, e.job_id) for e in change_events if e.kind != "changed"}
    print(f"pages {len(reachable)}, changed {len(changed)}, second visit: {len(whole)} whole, "
          f"{len(unchanged)} 304, {len(others)} other {sorted(set(others.values()))}, "
          f"{len(changed_urls)} change events; {took_s:.1f} s")  # fmt: skip

    assert first_ok == reachable, (first, pipeline.trouble())
    assert second["done"] == first["done"] - redirects, (first, second)
    assert len(events) == first["discovered"] - redirects, (first, second)
    assert 0 < len(changed) <= 0.12 * len(reachable)
    assert whole == changed, pipeline.trouble()  # full bodies for exactly the changed pages (<= 12 %)
    assert unchanged == reachable - changed
    assert changed_urls == changed  # a change event for every changed page and for no other
    assert monitor["scheduled"] == first["discovered"] - redirects - broken
    assert monitor["gone"] == broken and gone == ({("gone", second_job)} if broken else set())
    assert monitor["not_modified"] == len(reachable - changed) and monitor["changed"] == len(changed)


def _read_raw(settings: Settings, topic: str) -> list[Any]:
    return list(read_to_end(settings.kafka, topic))
