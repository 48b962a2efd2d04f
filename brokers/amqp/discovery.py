"""Routing URLs to frontier shards: the one place that decides which shard a URL goes to.

A page's links (or a redirect's target), a job's seeds and the messages ``reshard`` moves are grouped
by the frontier shard that owns their site and sent as :class:`~brokers.amqp.messages.DiscoveredBatch`
messages, routed to the shard's queue. A URL that cannot be routed (not http(s), no host) goes to
shard 0, whose frontier counts it as invalid: no URL leaves uncounted. A URL longer than
``MAX_URL_CHARS`` is left out, logged and counted (no message may carry it, no crawler fetches it):
one oversize link must not fail its page's batch, nor one oversize seed its job's submission.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from dualplane.brokers.amqp.messages import MAX_BATCH_URLS, MAX_URL_CHARS, DiscoveredBatch, Priority, new_id
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of

log = logging.getLogger(__name__)


def shard_of_url(topology: Topology, url: str) -> int:
    """The frontier shard owning ``url``'s site; 0 for a URL naming none (its frontier counts it invalid)."""
    try:
        return topology.shard_of(domain_of(url))
    except InvalidUrl:
        return 0


class ShardBatches:
    """URLs grouped by shard, handed out in lists of at most ``max_urls`` as each list fills.

    At most one open list per shard is held, so a seed list of millions streams in flat memory.
    ``added`` counts the URLs taken, ``left_out`` those longer than ``MAX_URL_CHARS``.
    """

    def __init__(self, topology: Topology, max_urls: int = MAX_BATCH_URLS) -> None:
        self.topology = topology
        self.max_urls = min(max_urls, MAX_BATCH_URLS)
        self.added = 0
        self.left_out = 0
        self._open: dict[int, list[str]] = {}

    def add(self, url: str) -> tuple[int, list[str]] | None:
        """Take ``url``; the ``(shard, urls)`` list it filled, if it filled one."""
        if len(url) > MAX_URL_CHARS:
            log.info("left out a URL of %d characters (limit %d): %.80s…", len(url), MAX_URL_CHARS, url)
            self.left_out += 1
            return None
        self.added += 1
        shard = shard_of_url(self.topology, url)
        urls = self._open.setdefault(shard, [])
        urls.append(url)
        return (shard, self._open.pop(shard)) if len(urls) >= self.max_urls else None

    def rest(self) -> Iterator[tuple[int, list[str]]]:
        """The lists not yet full, by shard; they are handed out once."""
        rest, self._open = self._open, {}
        yield from sorted(rest.items())


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
    ``MAX_BATCH_URLS`` (see :class:`ShardBatches`)."""
    batches = ShardBatches(topology)
    full = [filled for url in urls if (filled := batches.add(url)) is not None]
    for shard, shard_urls in [*full, *batches.rest()]:
        batch = DiscoveredBatch(
            job_id=job_id,
            trace_id=trace_id or new_id(),
            urls=tuple(shard_urls),
            depth=depth,
            priority=priority,
            source_url=source_url,
        )
        yield str(shard), batch
