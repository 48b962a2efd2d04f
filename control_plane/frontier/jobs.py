"""Job progress: the frontier publishes snapshots, anyone reads them, and one rule says when a job is done.

Each job has a one-slot queue (``x-max-length: 1``, drop-head) holding its newest progress as
JSON. Reading is a ``basic.get`` followed by a requeue, so any number of readers (``dualplane
status``, ``crawl --wait``) can look without a frontier having to answer them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from control_plane.amqp.publisher import publish
from control_plane.amqp.topology import Topology
from control_plane.frontier.store import FrontierState
from data_plane.kafka.lag import extractor_lag
from dualplane.core.settings import Settings


class JobSnapshots:
    """Remembers which jobs changed and publishes their progress when asked."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.marked: set[str] = set()
        self.declared: set[str] = set()

    def mark(self, job_id: str) -> None:
        self.marked.add(job_id)

    def publish_marked(self, channel: BlockingChannel, state: FrontierState) -> None:
        for job_id in sorted(self.marked):
            progress = state.progress(job_id)
            if progress is None:
                continue
            if job_id not in self.declared:
                self.topology.declare_job_queue(channel, job_id)
                self.declared.add(job_id)
            body = json.dumps(progress.as_dict()).encode()
            publish(channel, "", self.topology.job_queue(job_id), body)
        self.marked.clear()


def read_progress(channel: BlockingChannel, topology: Topology, job_id: str) -> dict[str, Any] | None:
    """The newest progress snapshot of ``job_id``, or None if the frontier never published one."""
    topology.declare_job_queue(channel, job_id)
    method, _properties, body = channel.basic_get(topology.job_queue(job_id), auto_ack=False)
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
