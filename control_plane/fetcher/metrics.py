"""The fetcher's Prometheus metrics: outcomes by class, latency, bytes, tasks, requests in flight,
and how long tasks waited in their lanes.

Counted in the fetch (:mod:`.worker`), when a task arrives and when it is settled (:mod:`.runner`);
requests in flight and tasks waiting for a permit are read from the runner when scraped (see
``core.metrics``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sized
from typing import Protocol

from prometheus_client import Counter, Histogram

from dualplane.brokers.amqp.lanes import PRIORITIES, Priority
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core import metrics


class Watched(Protocol):
    """What the scrape reads of a task runner (:class:`.runner.TaskRunner` is one)."""

    @property
    def lane_in_flight(self) -> Mapping[Priority, int]: ...
    @property
    def waiting(self) -> Sized: ...


FETCHES = Counter("dualplane_fetches", "Fetch attempts, by outcome class", ["outcome"])
FETCH_SECONDS = Histogram(
    "dualplane_fetch_duration_seconds",
    "Time from request to classified response (or failure)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
FETCHED_BYTES = Counter("dualplane_fetched_bytes", "Body bytes fetched (decoded)")
TASKS = Counter(
    "dualplane_fetch_tasks",
    "Tasks the fetcher settled: done, failed, retry, dead_letter; deferred (no permit or paused) and "
    "requeued (the hand-off to Kafka failed) are not attempts, nor are cancelled (the job was cancelled)",
    ["result"],
)

# The autoscaling signal beside the lanes' depth: how long tasks wait before a fetcher takes them.
# A lane is FIFO, so the task a fetcher receives was the oldest waiting there: the largest wait of a
# scrape interval is the age of the lane's oldest task at that moment (quorum queues report none).
LANE_WAIT_SECONDS = Histogram(
    "dualplane_lane_wait_seconds",
    "Time a crawl task waited in its lane before this fetcher received it, by lane",
    ["lane"],
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)
LANE_WAITS = {lane: LANE_WAIT_SECONDS.labels(lane) for lane in PRIORITIES}

LINKS = Counter("dualplane_fetch_links", "Links of fetched pages handed to the frontier")
LINKS_OVER_LIMIT = Counter(
    "dualplane_fetch_links_over_limit",
    "Links left out because their page had more than DUALPLANE_FETCH_MAX_LINKS_PER_PAGE",
)
SKIPPED_LINKS = Counter(
    "dualplane_fetch_skipped_links", "Anchors left out because they cannot be crawled, by scheme", ["scheme"]
)
COUNTED_SCHEMES = frozenset({"javascript", "mailto", "tel", "data", "ftp", "file"})
LINK_PAGES_UNPARSED = Counter(
    "dualplane_fetch_link_pages_unparsed", "HTML pages whose links could not be parsed (nested too deep)"
)
LINK_PARSE_SECONDS = Counter("dualplane_fetch_link_parse_cpu_seconds", "CPU time spent parsing links")

OUTCOMES = {outcome: FETCHES.labels(str(outcome)) for outcome in Outcome}
# Keyed by the retry policy's action (plus the two non-attempts); ``give_up`` is reported as failed.
RESULTS = {
    action: TASKS.labels(label)
    for action, label in (
        ("done", "done"), ("give_up", "failed"), ("retry", "retry"), ("dead_letter", "dead_letter"),
        ("deferred", "deferred"), ("requeued", "requeued"), ("defer", "deferred"), ("cancelled", "cancelled"),
        ("paused", "paused"),
    )
}  # fmt: skip


def fetched(outcome: Outcome, latency_ms: int, size_bytes: int) -> None:
    """Count one fetch attempt."""
    OUTCOMES[outcome].inc()
    FETCH_SECONDS.observe(latency_ms / 1000)
    if size_bytes:
        FETCHED_BYTES.inc(size_bytes)


def received(lane: Priority, enqueued_at_s: float | None) -> None:
    """Count how long a task waited in ``lane`` (from :func:`brokers.amqp.publisher.enqueued_at`;
    a clock behind the publisher's reads as no wait, never as a negative one)."""
    if enqueued_at_s is not None:
        LANE_WAITS[lane].observe(max(0.0, time.time() - enqueued_at_s))


def links_parsed(skipped: Mapping[str, int], cpu_s: float) -> None:
    """Count one page's link parse: anchors skipped for their scheme, and its CPU time."""
    for scheme, anchors in skipped.items():
        SKIPPED_LINKS.labels(scheme if scheme in COUNTED_SCHEMES else "other").inc(anchors)
    LINK_PARSE_SECONDS.inc(cpu_s)


def watch(runner: Watched) -> None:
    """Export the runner's requests in flight (per lane) and the tasks waiting for a permit."""
    metrics.probe(
        "dualplane_fetch_in_flight",
        "Requests in flight in this fetcher, by lane",
        lambda: [({"lane": lane}, float(n)) for lane, n in runner.lane_in_flight.items()],
        labels=("lane",),
    )
    metrics.probe(
        "dualplane_fetch_waiting_tasks",
        "Tasks received and waiting for capacity or a domain permit",
        metrics.value(lambda: len(runner.waiting)),
    )
