"""A job's seeds from sitemaps: each page with its ``lastmod``, and a dead letter for each bad sitemap.

Seeds go as :func:`~control_plane.frontier.submit.submit_job` sends them (batches per shard, each
confirmed), with ``lastmods_ms`` on the batch. A :class:`SitemapProblem` is published to the dead
letters with its reason (``dualplane dlq list`` shows it, kind ``sitemap``); it names no queue to
go back to, so ``dlq redrive`` leaves it: fix the sitemap and submit again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator

import pika
from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp.dead_letters import dead_letter
from dualplane.brokers.amqp.messages import CONTENT_TYPE, DiscoveredBatch, JobSpec, new_id
from dualplane.brokers.amqp.publisher import publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.robots import RobotsCache
from dualplane.control_plane.frontier.sitemaps import SitemapProblem, SitemapReader, SitemapStats
from dualplane.control_plane.frontier.submit import SEED_BATCH
from dualplane.core.settings import FetchSettings
from dualplane.core.web.client import GuardedClient
from dualplane.core.web.client_thread import ClientThread
from dualplane.core.web.sitemaps import SitemapEntry
from dualplane.core.web.ssrf import SsrfGuard

SOURCE = "sitemaps"  # the dead letter's "from": no queue, the reading at submit time


def seed_from_sitemaps(
    channel: BlockingChannel,
    topology: Topology,
    spec: JobSpec,
    *,
    fetch: FetchSettings,
    sitemaps: Iterable[str],
    robots_of: Iterable[str],
    on_problem: Callable[[SitemapProblem], None],
) -> SitemapStats:
    """Read ``sitemaps`` and those named by the robots.txt of each of ``robots_of``'s hosts (through the
    fetcher's SSRF guard and user agent), and submit their pages as seeds of ``spec``'s job (submitted
    already). Each problem is dead-lettered, then handed to ``on_problem``; what was read comes back."""

    def problem(found: SitemapProblem) -> None:
        dead_letter_sitemap(channel, topology, spec.job_id, found)
        on_problem(found)

    guard = SsrfGuard.from_setting(fetch.allow_hosts)
    client = ClientThread(GuardedClient(guard, user_agent=fetch.user_agent), name="sitemaps")
    try:
        reader = SitemapReader(client, on_problem=problem)
        submit_sitemap_seeds(channel, topology, spec, _entries(reader, sitemaps, robots_of))
    finally:
        client.close()
    return reader.stats


def _entries(
    reader: SitemapReader, sitemaps: Iterable[str], robots_of: Iterable[str]
) -> Iterator[SitemapEntry]:
    for url in sitemaps:
        yield from reader.entries(url)
    origins = {RobotsCache.origin_of(site): site for site in robots_of}  # one robots.txt per origin
    for site in origins.values():
        for url in reader.robots_sitemaps(site):
            yield from reader.entries(url, robots_site=site)


def submit_sitemap_seeds(
    channel: BlockingChannel,
    topology: Topology,
    spec: JobSpec,
    entries: Iterable[SitemapEntry],
    on_seed: Callable[[int], None] | None = None,
) -> int:
    """Publish every entry as a seed of ``spec``'s job (already submitted); return how many.

    At most one open batch per shard is held, so a sitemap of 50,000 URLs streams in flat memory.
    """
    open_batches: dict[int, list[SitemapEntry]] = {}
    count = 0
    for entry in entries:
        shard = topology.shard_of(entry.domain)
        batch = open_batches.setdefault(shard, [])
        batch.append(entry)
        if len(batch) >= SEED_BATCH:
            _send(channel, topology, spec, shard, open_batches.pop(shard))
        count += 1
        if on_seed is not None:
            on_seed(count)
    for shard, batch in open_batches.items():
        _send(channel, topology, spec, shard, batch)
    return count


def dead_letter_sitemap(
    channel: BlockingChannel, topology: Topology, job_id: str, problem: SitemapProblem
) -> None:
    """Publish ``problem`` to the dead letters, with its reason, as a ``sitemap`` of ``job_id``."""
    body = {
        "kind": "sitemap",
        "job_id": job_id,
        "url": problem.sitemap_url,
        "entries_used": problem.entries_used,
    }
    dead_letter(
        channel,
        topology,
        json.dumps(body, separators=(",", ":")).encode(),
        pika.BasicProperties(content_type=CONTENT_TYPE),
        reason=problem.reason,
        source_queue=SOURCE,
        exchange="",
        routing_key="",
    )


def _send(
    channel: BlockingChannel, topology: Topology, spec: JobSpec, shard: int, batch: list[SitemapEntry]
) -> None:
    seeds = DiscoveredBatch(
        job_id=spec.job_id,
        urls=tuple(entry.url for entry in batch),
        lastmods_ms=tuple(entry.lastmod_ms for entry in batch),
        depth=0,
        priority=spec.priority,
        seed=True,
    )
    publish(channel, topology.discovery_exchange, str(shard), seeds, message_id=new_id())
