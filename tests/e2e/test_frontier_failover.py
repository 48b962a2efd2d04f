"""Frontier shards fail over without losing or repeating a page, warm or from an empty data directory.

Three shards, each with an active frontier process and a standby (its own data directory, as on
another machine), a fetcher and an extractor, all as processes, crawling the sample site. Mid-crawl
the active frontier of one shard is killed with SIGKILL; its standby takes the shard over from the
changelog in Kafka. The site's own request log must show every reachable page fetched exactly once,
and the records topic exactly one committed record per page.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.progress import ProgressReader
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic
from tests.support.site_log import served_pages

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHARDS = 3
SITE = SiteSpec(seed=31, hosts=6, pages_per_host=40, latency_ms=10)


def _settings(control_plane: ControlPlaneFactory) -> Settings:
    settings = control_plane.settings()
    return settings.model_copy(
        update={
            "queues": settings.queues.model_copy(update={"frontier_shards": SHARDS}),
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=20, fetch_concurrency=16),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0.2, permit_wait_s=0.5),
        }
    )


def _frontier(pipeline: Pipeline, shard: int, data_dir: Path) -> subprocess.Popen[bytes]:
    env = {"DUALPLANE_FRONTIER_DATA_DIR": str(data_dir)}
    return pipeline.start("frontier", "--shard", str(shard), env=env)


def _busiest_shard(settings: Settings, site: SampleSite) -> int:
    """The shard owning most of the site's hosts (so killing its frontier interrupts real work)."""
    topology = Topology(settings.queues)
    owners = Counter(topology.shard_of(domain_of(seed)) for seed in site.seeds)
    assert len(owners) >= 2, f"the site's hosts should spread over the shards: {owners}"
    return owners.most_common(1)[0][0]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("standby", ["warm", "cold"])
def test_a_killed_shard_frontier_is_replaced_and_every_page_is_fetched_once(
    control_plane: ControlPlaneFactory, tmp_path: Path, standby: str
) -> None:
    settings = _settings(control_plane)
    pipeline = Pipeline(settings, tmp_path)
    probe = JobProbe(settings)
    try:
        with SampleSite(SITE) as site:
            victim = _busiest_shard(settings, site)
            actives = [_frontier(pipeline, shard, tmp_path / f"active-{shard}") for shard in range(SHARDS)]
            # The first consumer of a single-active-consumer queue is its active one: standbys after.
            queues = Topology(settings.queues).frontier_queues
            assert wait_for(lambda: all(probe.consumers(queue) for queue in queues), 60), pipeline.logs()
            if standby == "warm":
                for shard in range(SHARDS):
                    _frontier(pipeline, shard, tmp_path / f"standby-{shard}")
            pipeline.start("fetcher")
            pipeline.start("extractor")
            reachable = {canonicalize(url) for url in site.reachable_urls()}
            domains = tuple(domain_of(seed) for seed in site.seeds)
            probe.submit(JobSpec(job_id="failover", allowed_domains=domains), site.seeds)

            third = len(reachable) // 3
            assert wait_for(lambda: site.stats().total_requests >= third, 180), pipeline.logs()
            pipeline.kill(actives[victim])
            if standby == "cold":  # another machine: a new process with an empty data directory
                _frontier(pipeline, victim, tmp_path / "cold-standby")
            try:
                progress = probe.wait_finished("failover", timeout_s=300)
            except AssertionError as error:
                raise AssertionError(f"{error}\n{pipeline.trouble()}\n{pipeline.logs()}") from None
            served = served_pages(site)
        records = Counter(
            canonicalize(record["url"]) for record in read_topic(settings, settings.topics.records)
        )
    finally:
        pipeline.stop_all()

    assert set(served) == reachable, f"pages never fetched: {sorted(reachable - set(served))[:5]}"
    twice = {url: n for url, n in served.items() if n > 1}
    assert not twice, f"pages fetched more than once: {twice}"
    assert set(records) == reachable
    assert set(records.values()) == {1}, "a page has more than one committed record"
    assert progress["dead_lettered"] == 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize("successor", ["started after the kill", "standing by before it"])
def test_a_frontier_taking_over_a_quiet_shard_publishes_its_jobs_progress(
    control_plane: ControlPlaneFactory, tmp_path: Path, successor: str
) -> None:
    """The new owner of a shard that gets no more messages (no fetcher here: the seed's task waits in
    its lane, and no report comes back) still takes the shard over and publishes its jobs' progress.
    A frontier learns it owns a shard only from a delivery, so it sends itself a Wake: before, an owner
    killed with progress not yet published (or that lost Kafka in a pass with only progress to write)
    left a finished job looking unfinished for good (a chaos run waited 300 s on 'queued: 5').
    A standby that was already running sent its Wake at connect, to the owner then; it sends one
    every 10 s while it stands by, so it too learns that the broker made it the owner."""
    settings = _settings(control_plane).model_copy(
        update={"queues": control_plane.settings().queues.model_copy(update={"frontier_shards": 1})}
    )
    pipeline = Pipeline(settings, tmp_path)
    probe = JobProbe(settings)
    try:
        first = _frontier(pipeline, 0, tmp_path / "first")
        queue = Topology(settings.queues).frontier_queue(0)
        assert wait_for(lambda: probe.consumers(queue) > 0, 60), pipeline.logs()
        if successor == "standing by before it":
            _frontier(pipeline, 0, tmp_path / "second")
            # The broker counts only a single-active-consumer queue's active consumer: read the logs.
            assert wait_for(lambda: len(pipeline.lines(": consuming ")) >= 2, 60), pipeline.logs()
        probe.submit(JobSpec(job_id="quiet", allowed_domains=("quiet.example",)), ["http://quiet.example/"])
        probe.wait_progress("quiet", timeout_s=60, queued=1)
        pipeline.kill(first)

        taken_over_at = time.time()
        if successor == "started after the kill":
            _frontier(pipeline, 0, tmp_path / "second")  # another machine: an empty data directory
        with ProgressReader(settings) as reader:
            published = wait_for(
                lambda: float((reader.job("quiet") or {}).get("published_at", 0)) > taken_over_at, 60, 0.5
            )
            latest = reader.job("quiet") or {}
        assert published, f"the new owner never published the job's progress: {latest}\n{pipeline.logs()}"
        assert latest["queued"] == 1 and latest["seeded"] == 1, latest  # as the changelog has it
    finally:
        pipeline.stop_all()
