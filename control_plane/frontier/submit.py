"""Submitting crawl jobs: the job's rules first, then its seeds, each confirmed by the broker."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pika.adapters.blocking_connection import BlockingChannel

from control_plane.amqp.messages import DiscoveredUrl, JobSpec
from control_plane.amqp.publisher import publish
from control_plane.amqp.topology import Topology


def submit_job(
    channel: BlockingChannel,
    topology: Topology,
    spec: JobSpec,
    seeds: Iterable[str],
    on_seed: Callable[[int], None] | None = None,
) -> int:
    """Publish ``spec`` and then every seed to discovery on a confirm channel; return the seed count.

    The job goes first on the same queue, so the frontier always knows a job before its seeds.
    """
    topology.declare(channel)
    publish(channel, topology.discovery_exchange, "", spec)
    count = 0
    for url in seeds:
        seed = DiscoveredUrl(job_id=spec.job_id, url=url, depth=0, priority=spec.priority, seed=True)
        publish(channel, topology.discovery_exchange, "", seed)
        count += 1
        if on_seed is not None:
            on_seed(count)
    return count
