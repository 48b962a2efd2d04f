"""Reading job progress: follow the compacted progress topic and add the frontier shards up.

The writing side, and the topic's layout, are in :mod:`control_plane.frontier.jobs`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from dualplane.brokers.kafka import clients
from dualplane.control_plane.frontier.jobs import ensure_progress_topic
from dualplane.control_plane.frontier.schedule import MONITOR_COUNTERS
from dualplane.core.settings import KafkaSettings, Settings

# Monitors publish their snapshots to the same topic, keyed by this prefix and their id (see
# control_plane.frontier.monitors); jobs() leaves them out, monitors() reads them.
SNAPSHOT_KEY_PREFIX = "monitor:"
READ_WAIT_S = 0.05  # a reader is caught up once a poll this long brings nothing new
# How the shards' values add up, where not by summing.
COMBINE: dict[str, Callable[[list[float]], float]] = {
    "changed_at": max, "published_at": max, "created_at": min, "updated_at": max, "cancelled_at": max,
    "paused_at": max,
}  # fmt: skip


class ProgressReader:
    """Follows the progress topic from its beginning; :meth:`job` and :meth:`jobs` add the shards up.

    One Kafka consumer (no group, ``read_committed``) for the reader's life: each read brings only
    what was written since the last. Close it when done.
    """

    def __init__(self, settings: Settings) -> None:
        self.topic = settings.topics.job_progress
        self.shards = settings.queues.frontier_shards
        self.latest: dict[str, dict[int, dict[str, Any]]] = {}  # job -> shard -> snapshot
        ensure_progress_topic(settings)  # before any frontier ran, it reads an empty topic, not none
        self.consumer = _consumer(settings.kafka)
        partitions = range(self.shards)
        self.consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
        self._at_end = dict.fromkeys(partitions, False)

    def close(self) -> None:
        clients.close_within(self.consumer)

    def __enter__(self) -> ProgressReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def refresh(self, timeout_s: float = 10.0) -> None:
        """Read what was written since the last call (up to the last committed transaction)."""
        deadline = time.monotonic() + timeout_s
        while True:
            messages = self.consumer.consume(500, READ_WAIT_S)
            for message in messages:
                self._take(message)
            if (not messages and all(self._at_end.values())) or time.monotonic() > deadline:
                return

    def job(self, job_id: str) -> dict[str, Any] | None:
        """A job's progress over every shard, or None if no shard published any."""
        self.refresh()
        return _total(job_id, self.latest.get(job_id, {}), self.shards)

    def jobs(self) -> dict[str, dict[str, Any]]:
        """Every job's progress (shards added up)."""
        self.refresh()
        totals = {job_id: _total(job_id, shards, self.shards) for job_id, shards in self.latest.items()
                  if not job_id.startswith(SNAPSHOT_KEY_PREFIX)}  # fmt: skip
        return {job_id: total for job_id, total in totals.items() if total is not None}

    def cancelled(self) -> set[str]:
        """The jobs some shard called cancelled (as far as read: :meth:`refresh` first)."""
        return {job for job, shards in self.latest.items()
                if any(snapshot.get("cancelled_at") for snapshot in shards.values())}  # fmt: skip

    def paused(self) -> set[str]:
        """The jobs some shard holds paused (as far as read: :meth:`refresh` first)."""
        return {job for job, shards in self.latest.items()
                if any(snapshot.get("paused_at") for snapshot in shards.values())}  # fmt: skip

    def monitors(self) -> dict[str, dict[str, Any]]:
        """Every monitor's snapshot (shards added up), by monitor id."""
        self.refresh()
        return monitor_totals(
            {key: shards for key, shards in self.latest.items() if key.startswith(SNAPSHOT_KEY_PREFIX)}
        )

    def _take(self, message: Any) -> None:
        error = message.error()
        partition = int(message.partition() or 0)
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                self._at_end[partition] = True
            return
        self._at_end[partition] = False
        job_id = (message.key() or b"").decode()
        value = message.value()
        if value is None:
            self.latest.get(job_id, {}).pop(partition, None)
        else:
            self.latest.setdefault(job_id, {})[partition] = json.loads(value)


def _consumer(kafka: KafkaSettings) -> Any:
    overrides = {"enable.partition.eof": True, "fetch.wait.max.ms": 100}
    return clients.consumer(kafka, f"{kafka.group_prefix}-progress-reader", **overrides)


def _total(job_id: str, by_shard: dict[int, dict[str, Any]], shards: int) -> dict[str, Any] | None:
    """The shards' snapshots added up; ``idle`` holds only when every shard has published and is idle."""
    known = list(by_shard.values())
    if not known:
        return None
    total: dict[str, Any] = {"job_id": job_id}
    for name, value in known[0].items():
        if name == "shard" or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        values = [snapshot.get(name, 0) for snapshot in known]
        total[name] = COMBINE.get(name, sum)(values)
    total["idle"] = len(known) == shards and all(snapshot.get("idle") for snapshot in known)
    total["shards_reporting"] = len(known)
    return total


def monitor_totals(values: dict[str, dict[int, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per monitor, its shards' snapshots added up (as read from the progress topic by key)."""
    totals: dict[str, dict[str, Any]] = {}
    for by_shard in values.values():
        known = [s for s in by_shard.values() if s.get("kind") == "monitor" and not s.get("deleted")]
        if not known:
            continue
        first = known[0]
        total: dict[str, Any] = {
            "monitor_id": first["monitor_id"], "spec": first["spec"],
            "paused": any(s["paused"] for s in known), "visit": max(s["visit"] for s in known),
            "shards_reporting": len(known),
        }  # fmt: skip
        for name in (*MONITOR_COUNTERS, "due_now", "overdue"):
            total[name] = sum(int(s.get(name, 0)) for s in known)
        oldest = [s["oldest_due_at"] for s in known if s.get("oldest_due_at") is not None]
        total["oldest_due_at"] = min(oldest) if oldest else None
        total["published_at"] = max(float(s.get("published_at", 0)) for s in known)
        totals[first["monitor_id"]] = {**total, **rates(total)}
    return totals


def rates(total: dict[str, Any]) -> dict[str, Any]:
    """What a monitor's counters say: the share of revisits that found a change (a skip for the
    sitemap's lastmod counts as unchanged), the share of fetched revisits answered 304, and how long
    the oldest overdue URL has waited (as of the snapshot)."""
    fetched = total["changed"] + total["unchanged"] + total["not_modified"]
    judged = fetched + total["skipped"]
    oldest = total.get("oldest_due_at")
    return {
        "revisits": judged,
        "change_rate": round(total["changed"] / judged, 4) if judged else None,
        "share_304": round(total["not_modified"] / fetched, 4) if fetched else None,
        "oldest_overdue_s": round(total["published_at"] - oldest) if total["overdue"] and oldest else 0,
    }
