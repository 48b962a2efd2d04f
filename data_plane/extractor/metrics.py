"""The extractor's Prometheus metrics: extraction time, pages read, records produced; replay progress.

Pages, records and dead letters are the counts the extractor keeps anyway, read when scraped;
records and dead letters are added to the shared produce counters once their transaction commits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from prometheus_client import Gauge, Histogram

from dualplane.brokers.kafka.metrics import watch_lag
from dualplane.core import metrics
from dualplane.core.settings import Settings


class Watched(Protocol):
    """What the scrape reads of an extractor (:class:`.service.Extractor` is one)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def group_id(self) -> str: ...
    @property
    def pages(self) -> int: ...
    @property
    def records(self) -> int: ...


EXTRACT_SECONDS = Histogram(
    "dualplane_extract_duration_seconds",
    "Time to extract one raw page into a record and encode it",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
)


EXTRACT_CPU_SECONDS = Histogram(
    "dualplane_extract_cpu_seconds",
    "CPU time of the extracting thread to extract one raw page into a record and encode it",
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
"""The service's own cost per page, as ``benchmarks/extraction_speed.py`` measures it in a script: CPU
of this thread only (``time.thread_time``), so neither the wait for a core on a loaded machine nor the
other services of ``dualplane run all`` in the same process count. Its ``_sum / _count`` is the CPU
ms/page a crawl's pages cost the extractor (``benchmarks/crawl_vs_scrapy.py`` reads it)."""


def watch(extractor: Watched) -> None:
    """Export the extractor's counts and its consumer group's lag on ``pages.raw``."""
    metrics.probe(
        "dualplane_extractor_pages",
        "Raw pages handled (a batch redone after an abort counts again)",
        metrics.value(lambda: extractor.pages),
        kind="counter",
    )
    metrics.probe(
        "dualplane_extractor_records",
        "Records produced (a batch redone after an abort counts again)",
        metrics.value(lambda: extractor.records),
        kind="counter",
    )
    watch_lag(extractor.settings.kafka, extractor.group_id, [extractor.settings.topics.pages_raw])


REPLAY_PLANNED = Gauge("dualplane_replay_pages_planned", "Pages in the range being replayed", ["to_topic"])
REPLAY_DONE = Gauge("dualplane_replay_pages_done", "Pages of that range replayed so far", ["to_topic"])


def replay_progress(to_topic: str, planned: int, then: Callable[[int], None] | None) -> Callable[[int], None]:
    """A replay's progress callback that also moves the replay gauges (then calls ``then``)."""
    REPLAY_PLANNED.labels(to_topic).set(planned)
    done = REPLAY_DONE.labels(to_topic)
    done.set(0)

    def advance(count: int) -> None:
        done.inc(count)
        if then is not None:
            then(count)

    return advance
