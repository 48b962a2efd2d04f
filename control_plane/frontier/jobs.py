"""Job progress snapshots: the frontier publishes, anyone reads, no RPC needed.

Each job has a one-slot queue (``x-max-length: 1``, drop-head) holding its newest progress as
JSON. Reading is a ``basic.get`` followed by a requeue, so any number of readers (``dualplane
status``, ``crawl --wait``) can look without a frontier having to answer them.
"""

from __future__ import annotations

import json
from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from control_plane.amqp.publisher import publish
from control_plane.amqp.topology import Topology
from control_plane.frontier.store import FrontierState


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
