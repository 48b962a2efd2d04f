"""Submitting crawl jobs: the job's rules to every shard first, then its seeds, each confirmed.

Seeds are routed to the shard of their site and sent in batches (``SEED_BATCH`` URLs a message),
so a seed list of millions of URLs streams through in flat memory: at most one open batch per
shard is held. A seed that is not a crawlable URL still goes (to shard 0), where the frontier
counts it as invalid, so the job's counters account for every seed submitted.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable

from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp.discovery import ShardBatches
from dualplane.brokers.amqp.messages import (
    MAX_URL_CHARS,
    DiscoveredBatch,
    JobCancel,
    JobPause,
    JobSpec,
    new_id,
)
from dualplane.brokers.amqp.publisher import publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.exceptions import ScopeTooWide
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of

log = logging.getLogger(__name__)

SEED_BATCH = 500
MAX_SCOPE_DOMAINS = 10_000  # as DUALPLANE_SEEDS_MAX_SCOPE_DOMAINS's default


def default_scope(
    seeds: Iterable[str],
    *,
    max_domains: int = MAX_SCOPE_DOMAINS,
    source: str = "the seeds",
    on_seed: Callable[[int], None] | None = None,
) -> tuple[str, ...]:
    """A job's scope when none is given: the domains of its seeds, sorted (each admits its subdomains,
    see :class:`~control_plane.frontier.scope.ScopeRules`). A seed naming no site adds none.

    One full pass over ``seeds``; memory grows with the distinct domains only, hence the cap:
    :class:`ScopeTooWide` past ``max_domains``, naming ``source`` and the options to use instead.
    ``on_seed(count)`` is called after each seed, as :func:`submit_job` does.
    """
    domains: set[str] = set()
    for number, url in enumerate(seeds, 1):
        with contextlib.suppress(InvalidUrl):  # no site: it goes to shard 0, counted invalid there
            domains.add(domain_of(url))
        if len(domains) > max_domains:
            raise ScopeTooWide(
                f"{source} span more than {max_domains} domains (DUALPLANE_SEEDS_MAX_SCOPE_DOMAINS): "
                "pass --allow-domain for the scope you want, or --any-domain"
            )
        if on_seed is not None:
            on_seed(number)
    return tuple(sorted(domains))


def submit_job(
    channel: BlockingChannel,
    topology: Topology,
    spec: JobSpec,
    seeds: Iterable[str],
    on_seed: Callable[[int], None] | None = None,
) -> int:
    """Publish ``spec`` to every shard, then every seed, on a confirm channel (the topology declared);
    return the seed count.

    The job goes first on each shard's queue, so a frontier always knows a job before its seeds.
    Seeds are routed as links are (:class:`~brokers.amqp.discovery.ShardBatches`): one longer than a
    URL may be is left out, logged, and not counted.
    """
    for shard in range(topology.shards):
        publish(channel, topology.discovery_exchange, str(shard), spec, message_id=new_id())
    batches = ShardBatches(topology, SEED_BATCH)
    for url in seeds:
        full = batches.add(url)
        if full is not None:
            _send(channel, topology, spec, *full)
        if on_seed is not None:
            on_seed(batches.added)
    for shard, urls in batches.rest():
        _send(channel, topology, spec, shard, urls)
    if batches.left_out:
        log.warning("left out %d seed(s) longer than %d characters", batches.left_out, MAX_URL_CHARS)
    return batches.added


def cancel_job(channel: BlockingChannel, topology: Topology, job_id: str) -> None:
    """Publish a :class:`JobCancel` to every shard, as :func:`submit_job` publishes the job's rules:
    after them on each shard's queue, so a shard always knows the job it is told to cancel."""
    cancel = JobCancel(job_id=job_id)
    for shard in range(topology.shards):
        publish(channel, topology.discovery_exchange, str(shard), cancel, message_id=new_id())


def pause_job(channel: BlockingChannel, topology: Topology, job_id: str, *, paused: bool) -> None:
    """Publish a :class:`JobPause` (``paused``: pause, else resume) to every shard, as
    :func:`cancel_job` does; each shard takes it after the job's rules."""
    pause = JobPause(job_id=job_id, paused=paused)
    for shard in range(topology.shards):
        publish(channel, topology.discovery_exchange, str(shard), pause, message_id=new_id())


def _send(channel: BlockingChannel, topology: Topology, spec: JobSpec, shard: int, urls: list[str]) -> None:
    seeds = DiscoveredBatch(job_id=spec.job_id, urls=tuple(urls), depth=0, priority=spec.priority, seed=True)
    publish(channel, topology.discovery_exchange, str(shard), seeds, message_id=new_id())
