"""The frontier's Prometheus metrics: URLs judged by verdict, tasks issued, outstanding tasks per shard.

Verdicts are counted once per discovery batch; outstanding tasks and whether this process owns a
shard are read when scraped (see ``core.metrics``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from prometheus_client import Counter

from dualplane.core import metrics


class Outstanding(Protocol):
    def total_outstanding(self) -> int: ...


class Watched(Protocol):
    """What the scrape reads of a shard's frontier (:class:`.service.Frontier` is one)."""

    @property
    def shard(self) -> int: ...
    @property
    def active(self) -> bool: ...
    @property
    def state(self) -> Outstanding: ...


URLS = Counter(
    "dualplane_frontier_urls",
    "Discovered URLs the frontier judged, by verdict (seeded and discovered count what came in)",
    ["verdict"],
)
TASKS_ISSUED = Counter("dualplane_frontier_tasks_issued", "Crawl tasks published to the lanes")

_watched: dict[int, Watched] = {}  # shard -> the frontier of this process serving it


_verdicts: dict[str, Counter] = {}  # label children, bound once (a lookup costs more than the increment)


def judged(counts: Mapping[str, int]) -> None:
    for verdict, count in counts.items():
        if count:
            child = _verdicts.get(verdict) or _verdicts.setdefault(verdict, URLS.labels(verdict))
            child.inc(count)


def watch(frontier: Watched) -> None:
    """Export the shard's outstanding tasks and whether this process is its active frontier."""
    _watched[frontier.shard] = frontier
    metrics.probe(
        "dualplane_frontier_outstanding_tasks",
        "Tasks issued and not final (queued, in flight, retrying), by shard",
        lambda: [({"shard": str(s)}, float(f.state.total_outstanding())) for s, f in _watched.items()],
        labels=("shard",),
    )
    metrics.probe(
        "dualplane_frontier_active",
        "1 where this process is the shard's active frontier, 0 where it stands by",
        lambda: [({"shard": str(s)}, float(f.active)) for s, f in _watched.items()],
        labels=("shard",),
    )
