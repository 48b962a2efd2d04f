"""Changing the number of frontier shards mid-crawl: every page is still fetched exactly once.

The sample site is crawled by a frontier, a fetcher and an extractor as processes. A third of the
way in, the fleet is stopped, ``dualplane reshard --to M`` moves the shards' state and queued
discovery, and the fleet starts again with M shards. The site's own request log must show every
reachable page fetched exactly once, the records topic one committed record per page, and the
job's counters, added up over the new shards, every admitted URL ended exactly once.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic
from tests.support.site_log import served_pages

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = SiteSpec(seed=37, hosts=6, pages_per_host=40, latency_ms=10)


def _settings(control_plane: ControlPlaneFactory, shards: int) -> Settings:
    settings = control_plane.settings()  # a namespace of its own
    return settings.model_copy(
        update={
            "queues": settings.queues.model_copy(update={"frontier_shards": shards}),
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=20, fetch_concurrency=16),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0.2, permit_wait_s=0.5),
        }
    )


@contextlib.contextmanager
def _site_over_shards(topology: Topology) -> Iterator[SampleSite]:
    """The sample site, on free ports whose hosts fall on at least two of ``topology``'s shards.

    Hosts are routed by a hash of ``host:port``, and six free ports put every host on one shard of
    two in about one run in 32: the test then had nothing to move and failed its precondition.
    """
    for _ in range(20):
        site = SampleSite(SITE).start()
        if len({topology.shard_of(domain_of(seed)) for seed in site.seeds}) >= 2:
            break
        site.stop()
    else:
        raise AssertionError("20 sets of free ports all put the site's hosts on one shard")
    try:
        yield site
    finally:
        site.stop()


def _start_fleet(pipeline: Pipeline) -> None:
    pipeline.start("frontier")
    pipeline.start("fetcher")
    pipeline.start("extractor")


def _stop_quietly(pipeline: Pipeline, probe: JobProbe, site: SampleSite) -> None:
    """Stop the fleet with nothing in flight: the frontier first, then the others once the fetcher
    has done the queued tasks (a fetcher stopped mid-fetch may fetch a page again, which is not
    what this test is about). Discovery keeps arriving in the shard queues meanwhile."""
    frontier = pipeline.processes[0][1]
    frontier.terminate()
    frontier.wait(60)
    requests = [-1]

    def settled() -> bool:
        now = site.stats().total_requests
        still, requests[0] = now == requests[0], now
        return still and all(probe.lane_depth(lane) == 0 for lane in ("high", "normal", "bulk"))

    assert wait_for(settled, 120, interval_s=3), pipeline.logs()
    pipeline.stop_all()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("before", "after"), [(2, 3), (3, 1)])
def test_resharding_mid_crawl_fetches_every_page_once(
    control_plane: ControlPlaneFactory, tmp_path: Path, before: int, after: int
) -> None:
    old = _settings(control_plane, before)
    new = old.model_copy(update={"queues": old.queues.model_copy(update={"frontier_shards": after})})
    (tmp_path / "after").mkdir()
    first, second = Pipeline(old, tmp_path), Pipeline(new, tmp_path / "after")
    try:
        with _site_over_shards(Topology(old.queues)) as site:
            _start_fleet(first)
            reachable = {canonicalize(url) for url in site.reachable_urls()}
            domains = tuple(domain_of(seed) for seed in site.seeds)
            JobProbe(old).submit(JobSpec(job_id="reshard", allowed_domains=domains), site.seeds)
            third = len(reachable) // 3
            assert wait_for(lambda: site.stats().total_requests >= third, 180), first.logs()
            _stop_quietly(first, JobProbe(old), site)

            done = run_cli("reshard", "--to", str(after), "--json", env=old.to_env())
            assert done.exit_code == 0, done.stderr
            again = run_cli("reshard", "--to", str(after), "--json", env=old.to_env())  # a rerun is harmless
            assert again.exit_code == 0, again.stderr
            _start_fleet(second)
            try:
                progress = JobProbe(new).wait_finished("reshard", timeout_s=300)
            except AssertionError as error:
                reports = f"reshard: {done.stdout}{done.stderr}\nrerun: {again.stdout}"
                raise AssertionError(f"{error}\n{reports}\n{second.trouble()}\n{second.logs()}") from None
            served = served_pages(site)
        records = Counter(canonicalize(record["url"]) for record in read_topic(new, new.topics.records))
    finally:
        first.stop_all()
        second.stop_all()

    report = done.json()
    assert (report["shards_before"], report["shards_after"]) == (before, after)
    assert report["changelog_records"] > 0 and report["moved_state"]["domains"] > 0, report
    assert again.json()["changelog_records"] == 0, "a rerun should find every row in place"
    assert set(served) == reachable, f"pages never fetched: {sorted(reachable - set(served))[:5]}"
    twice = {url: n for url, n in served.items() if n > 1}
    assert not twice, f"pages fetched more than once: {twice}"
    assert set(records) == reachable
    assert set(records.values()) == {1}, "a page has more than one committed record"
    # Counters added up over the new shards: every admitted URL ended, none twice.
    assert progress["done"] + progress["failed"] == progress["discovered"], progress
    assert progress["dead_lettered"] == 0
    assert progress["shards_reporting"] == after


def test_resharding_a_running_fleet_is_refused_with_what_to_stop(
    control_plane: ControlPlaneFactory, tmp_path: Path
) -> None:
    settings = _settings(control_plane, 2)
    pipeline = Pipeline(settings, tmp_path)
    try:
        pipeline.start("frontier")
        probe = JobProbe(settings)
        queue = Topology(settings.queues).frontier_queue(0)
        assert wait_for(lambda: probe.consumers(queue) > 0, 60), pipeline.logs()
        result = run_cli("reshard", "--to", "3", env=settings.to_env())
    finally:
        pipeline.stop_all()
    assert result.exit_code == 1
    assert f"{queue} has 1 consumer(s): stop every frontier" in result.stderr
    assert "Traceback" not in result.stderr
