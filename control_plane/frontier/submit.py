"""Submitting crawl jobs: the job's rules to every shard first, then its seeds, each confirmed.

Seeds are routed to the shard of their site and sent in batches (``SEED_BATCH`` URLs a message),
so a seed list of millions of URLs streams through in flat memory: at most one open batch per
shard is held. A seed that is not a crawlable URL still goes (to shard 0), where the frontier
counts it as invalid, so the job's counters account for every seed submitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pika.adapters.blocking_connection import BlockingChannel

from brokers.amqp.messages import MAX_URL_CHARS, DiscoveredBatch, JobSpec, new_id
from brokers.amqp.publisher import publish
from brokers.amqp.topology import Topology
from core.web.exceptions import InvalidUrl
from core.web.urls import domain_of

SEED_BATCH = 500


def submit_job(
    channel: BlockingChannel,
    topology: Topology,
    spec: JobSpec,
    seeds: Iterable[str],
    on_seed: Callable[[int], None] | None = None,
) -> int:
    """Publish ``spec`` to every shard, then every seed, on a confirm channel; return the seed count.

    The job goes first on each shard's queue, so a frontier always knows a job before its seeds.
    """
    topology.declare(channel)
    for shard in range(topology.shards):
        publish(channel, topology.discovery_exchange, str(shard), spec, message_id=new_id())
    open_batches: dict[int, list[str]] = {}
    count = 0
    for url in seeds:
        if len(url) > MAX_URL_CHARS:
            raise InvalidUrl(
                f"seed {url[:80]!r}… is {len(url)} characters long; the limit is {MAX_URL_CHARS}"
            )
        shard = _shard_of(topology, url)
        batch = open_batches.setdefault(shard, [])
        batch.append(url)
        if len(batch) >= SEED_BATCH:
            _send(channel, topology, spec, shard, open_batches.pop(shard))
        count += 1
        if on_seed is not None:
            on_seed(count)
    for shard, batch in open_batches.items():
        _send(channel, topology, spec, shard, batch)
    return count


def _shard_of(topology: Topology, url: str) -> int:
    try:
        return topology.shard_of(domain_of(url))
    except InvalidUrl:
        return 0


def _send(channel: BlockingChannel, topology: Topology, spec: JobSpec, shard: int, urls: list[str]) -> None:
    seeds = DiscoveredBatch(job_id=spec.job_id, urls=tuple(urls), depth=0, priority=spec.priority, seed=True)
    publish(channel, topology.discovery_exchange, str(shard), seeds, message_id=new_id())
