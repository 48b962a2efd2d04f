"""Handing discovered URLs to the frontier: one message per source and shard, not one per link.

A page's links (or a redirect's target) are grouped by the frontier shard that owns their site and
sent as :class:`~brokers.amqp.messages.DiscoveredBatch` messages, at most
``MAX_BATCH_URLS`` URLs each, routed to the shard's queue. A URL that cannot be routed (not http(s),
no host) goes to shard 0, whose frontier counts it as invalid: no URL leaves uncounted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from brokers.amqp.messages import MAX_BATCH_URLS, MAX_URL_CHARS, DiscoveredBatch, Priority, new_id
from brokers.amqp.topology import Topology
from core.web.exceptions import InvalidUrl
from core.web.urls import domain_of

log = logging.getLogger(__name__)


def discovery_batches(
    topology: Topology,
    job_id: str,
    urls: Iterable[str],
    *,
    depth: int,
    source_url: str | None = None,
    trace_id: str | None = None,
    priority: Priority | None = None,
) -> Iterator[tuple[str, DiscoveredBatch]]:
    """``(routing key, message)`` for each shard that ``urls`` name, in batches of at most
    ``MAX_BATCH_URLS``. URLs longer than ``MAX_URL_CHARS`` are left out (no crawler fetches them)."""
    by_shard: dict[int, list[str]] = {}
    for url in urls:
        if len(url) > MAX_URL_CHARS:
            log.info("left out a link of %d characters (limit %d): %.80s…", len(url), MAX_URL_CHARS, url)
            continue
        try:
            shard = topology.shard_of(domain_of(url))
        except InvalidUrl:
            shard = 0
        by_shard.setdefault(shard, []).append(url)
    for shard, shard_urls in sorted(by_shard.items()):
        for start in range(0, len(shard_urls), MAX_BATCH_URLS):
            batch = DiscoveredBatch(
                job_id=job_id,
                trace_id=trace_id or new_id(),
                urls=tuple(shard_urls[start : start + MAX_BATCH_URLS]),
                depth=depth,
                priority=priority,
                source_url=source_url,
            )
            yield str(shard), batch
