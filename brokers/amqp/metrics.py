"""Queue depths of the control plane as Prometheus gauges, read from the management API when scraped.

Lanes, retry tiers, dead letters and frontier shard queues are exported (``Topology.control_queues``);
the per-domain permit queues are not (one per domain ever crawled: a series each would grow without
bound). Registered by the frontier's process, so a fleet exports each depth once, not once per fetcher.
"""

from __future__ import annotations

import os

from dualplane.brokers.amqp.management import queue_stats
from dualplane.brokers.amqp.topology import Topology
from dualplane.core import metrics
from dualplane.core.settings import Settings

QUEUE_TTL_S = 5.0  # the management API refreshes its figures every 5 s anyway


def watch_queues(settings: Settings) -> None:
    """Export ``dualplane_queue_messages{queue, state}`` (ready and unacked messages per queue) and
    ``dualplane_queue_consumers{queue}``."""
    watched = set(Topology(settings.queues).control_queues())
    prefix = os.path.commonprefix(sorted(watched))  # noqa: RUF071 (queue names, not paths)

    def read() -> list[metrics.Sample]:
        samples: list[metrics.Sample] = []
        for queue in queue_stats(settings.amqp, prefix):
            if queue.name in watched:
                samples.append(({"queue": queue.name, "state": "ready"}, float(queue.ready)))
                samples.append(({"queue": queue.name, "state": "unacked"}, float(queue.unacked)))
        return samples

    def consumers() -> list[metrics.Sample]:
        return [
            ({"queue": queue.name}, float(queue.consumers))
            for queue in queue_stats(settings.amqp, prefix)
            if queue.name in watched
        ]

    metrics.probe(
        "dualplane_queue_messages",
        "Messages in a control-plane queue: ready (waiting) or unacked (with a consumer)",
        read,
        labels=("queue", "state"),
        ttl_s=QUEUE_TTL_S,
    )
    # Beside the depth, the consumers: a lane's ready messages per consumer is its depth per
    # fetcher, what an autoscaler compares with a target (docs/multi-machine.md, "Autoscaling").
    metrics.probe(
        "dualplane_queue_consumers",
        "Consumers of a control-plane queue (a lane's are the fetcher processes taking its tasks)",
        consumers,
        labels=("queue",),
        ttl_s=QUEUE_TTL_S,
    )
