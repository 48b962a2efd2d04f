"""Submitting and following a job: its default scope and the routing of its seeds, decided once.

The default scope was decided in ``crawl``, the demo and the anti-bot loop, each its own way; seeds
were routed by ``submit_job`` (an oversize seed raised mid-job) and links by the discovery batches
(an oversize link was left out). Both now go through :class:`ShardBatches`.
"""

from __future__ import annotations

import time

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.discovery import ShardBatches, shard_of_url
from dualplane.brokers.amqp.messages import MAX_URL_CHARS, DiscoveredBatch, JobSpec, decode
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.client import JobClient
from dualplane.control_plane.frontier.exceptions import ScopeTooWide
from dualplane.control_plane.frontier.submit import default_scope
from dualplane.core.settings import QueueSettings
from tests.support.factories import ControlPlaneFactory

OVERSIZE = "http://a.test/" + "x" * MAX_URL_CHARS


@pytest.mark.unit
def test_the_default_scope_is_the_seeds_domains_up_to_a_cap() -> None:
    seeds = ["http://shop.example/a", "mailto:x@y", "http://news.example:8080/b", "http://shop.example/c"]
    assert default_scope(seeds) == ("news.example:8080", "shop.example")
    with pytest.raises(ScopeTooWide, match="the seeds span more than 1 domains"):
        default_scope(seeds, max_domains=1)


@pytest.mark.unit
def test_urls_go_to_their_sites_shard_in_full_lists_and_oversize_ones_are_left_out() -> None:
    topology = Topology(QueueSettings(frontier_shards=4))
    batches = ShardBatches(topology, max_urls=2)
    urls = [f"http://site{i}.test/{j}" for i in range(8) for j in range(3)]
    full = [batch for url in [*urls, OVERSIZE, "not a url"] if (batch := batches.add(url))]
    handed = [*full, *batches.rest()]
    assert all(len(batch) <= 2 for _, batch in handed)
    assert sorted(url for _, batch in handed for url in batch) == sorted([*urls, "not a url"])
    assert all(shard_of_url(topology, url) == shard for shard, batch in handed for url in batch)
    assert shard_of_url(topology, "not a url") == 0
    assert (batches.added, batches.left_out) == (len(urls) + 1, 1)


@pytest.mark.integration
def test_a_submitted_jobs_oversize_seed_is_left_out_and_the_rest_go(
    control_plane: ControlPlaneFactory,
) -> None:
    settings = control_plane.settings(frontier_shards=2)
    topology = Topology(settings.queues)
    seeds = ["http://a.test/1", OVERSIZE, "http://b.test/2"]
    assert JobClient(settings).submit(JobSpec(job_id="sized"), seeds) == 2
    connection = amqp.connect(settings.amqp)
    try:
        channel = connection.channel()
        received = []
        for queue in topology.frontier_queues:  # single active consumer: no basic.get
            for method, _, body in channel.consume(queue, auto_ack=True, inactivity_timeout=0.3):
                if method is None:
                    break
                message = decode(body)
                if isinstance(message, DiscoveredBatch):
                    received += message.urls
            channel.cancel()
    finally:
        connection.close()
    assert sorted(received) == ["http://a.test/1", "http://b.test/2"]


@pytest.mark.integration
def test_following_a_job_nobody_runs_looks_until_the_timeout_and_says_why(
    control_plane: ControlPlaneFactory,
) -> None:
    started = time.monotonic()
    looks = list(JobClient(control_plane.settings()).follow("nobody", timeout_s=2.0, every_s=0.2))
    assert time.monotonic() - started < 2.0 + 12  # the last look may start just before the timeout
    assert looks  # one look at least, however slow the machine (opening the reader takes ~1 s)
    assert all(snapshot is None and not verdict.finished for snapshot, verdict in looks)
    assert looks[-1][1].why.startswith("no progress published yet")
