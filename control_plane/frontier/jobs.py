"""Job progress: each frontier shard publishes snapshots, anyone reads them, one rule says "done".

Each job has a one-slot queue per shard (``x-max-length: 1``, drop-head) holding that shard's
newest progress as JSON. Reading is a ``basic.get`` followed by a requeue per shard, so any number
of readers (``dualplane status``, ``crawl --wait``) can look without a frontier having to answer;
:func:`read_progress` adds the shards' counters up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from control_plane.amqp.consumer import ControlConsumer
from control_plane.amqp.topology import Topology
from control_plane.frontier.store import FrontierState
from data_plane.kafka.lag import extractor_lag
from dualplane.core.settings import Settings


class JobSnapshots:
    """Remembers which jobs changed on one shard and publishes their progress when asked."""

    def __init__(self, topology: Topology, shard: int) -> None:
        self.topology = topology
        self.shard = shard
        self.marked: set[str] = set()
        self.declared: set[str] = set()

    def mark(self, job_id: str) -> None:
        self.marked.add(job_id)

    def mark_all(self, job_ids: list[str]) -> None:
        self.marked.update(job_ids)

    def reset(self) -> None:
        """A new connection: queues declared on the old one are declared again when next used."""
        self.declared.clear()

    def publish_marked(self, consumer: ControlConsumer, state: FrontierState) -> None:
        assert consumer.channel is not None
        for job_id in sorted(self.marked):
            progress = state.progress(job_id)
            if progress is None:
                continue
            queue = self.topology.job_queue(job_id, self.shard)
            if queue not in self.declared:
                self.topology.declare_job_queue(consumer.channel, job_id, self.shard)
                self.declared.add(queue)
            consumer.publish("", queue, json.dumps(progress.as_dict()).encode())
        self.marked.clear()


def read_progress(channel: BlockingChannel, topology: Topology, job_id: str) -> dict[str, Any] | None:
    """A job's progress over every shard (counters added up), or None if no shard published any.

    ``idle`` holds only when every shard has published and is idle.
    """
    snapshots = [_read_one(channel, topology, job_id, shard) for shard in range(topology.shards)]
    known = [snapshot for snapshot in snapshots if snapshot is not None]
    if not known:
        return None
    total: dict[str, Any] = {"job_id": job_id}
    for name, value in known[0].items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        values = [snapshot.get(name, 0) for snapshot in known]
        total[name] = (
            min(values) if name == "created_at" else max(values) if name == "updated_at" else sum(values)
        )
    total["idle"] = len(known) == len(snapshots) and all(snapshot.get("idle") for snapshot in known)
    total["shards_reporting"] = len(known)
    return total


def _read_one(channel: BlockingChannel, topology: Topology, job_id: str, shard: int) -> dict[str, Any] | None:
    topology.declare_job_queue(channel, job_id, shard)
    method, _properties, body = channel.basic_get(topology.job_queue(job_id, shard), auto_ack=False)
    if method is None:
        return None
    channel.basic_nack(method.delivery_tag, requeue=True)
    snapshot: dict[str, Any] = json.loads(body)
    return snapshot


FINISHED_STAGES = ("done", "failed", "dead_lettered")
"""Counters of tasks that reached an end: how much of a job is behind it."""


def finished_count(snapshot: dict[str, Any]) -> int:
    """Tasks of the job that reached an end (done, failed or dead-lettered)."""
    return sum(int(snapshot.get(key, 0)) for key in FINISHED_STAGES)


class FinishRule:
    """When a followed job is finished: the one rule ``crawl --wait``, the demo and the tests use.

    Feed it every progress snapshot you read (:meth:`finished`). A job is finished when the
    frontier calls it idle (nothing queued, in flight, retrying or in the backlog), at least one
    task reached an end, its counters have not moved for ``quiet_s``, and the extractor has caught
    up: idle at the frontier is not enough, since pages not yet extracted may hold links that start
    new tasks. ``extractor_lag`` is asked only once the rest holds (it queries Kafka).
    """

    def __init__(
        self,
        extractor_lag: Callable[[], int],
        *,
        quiet_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.extractor_lag = extractor_lag
        self.quiet_s = quiet_s
        self.clock = clock
        self.last: dict[str, Any] | None = None
        self.last_lag: int | None = None
        self.changed_at = clock()  # when the snapshot last changed
        self._since = self.changed_at  # start of the current quiet period

    @classmethod
    def from_settings(cls, settings: Settings, *, quiet_s: float = 3.0) -> FinishRule:
        """The rule with the extractor's lag on ``pages.raw`` read from Kafka."""
        return cls(lambda: extractor_lag(settings), quiet_s=quiet_s)

    def finished(self, snapshot: dict[str, Any] | None) -> bool:
        """Whether the job is finished, given its newest snapshot (None: not published yet)."""
        now = self.clock()
        if snapshot != self.last:
            self.last, self.changed_at, self._since = snapshot, now, now
            return False
        if snapshot is None or not snapshot.get("idle") or finished_count(snapshot) == 0:
            return False
        if now - self._since < self.quiet_s:
            return False
        self.last_lag = self.extractor_lag()
        if self.last_lag != 0:
            self._since = now  # quiet again before asking Kafka once more
            return False
        return True

    def unchanged_for_s(self) -> float:
        """How long the snapshot has not changed (a stalled job's counters stop moving)."""
        return self.clock() - self.changed_at
