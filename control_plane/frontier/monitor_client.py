"""The monitor client: what the CLI, the demo and tests call to create, change and read monitors.

Monitors live in the frontier shards (:mod:`.monitors`); a client reaches them as control messages on
the discovery exchange, one to every shard, each confirmed (as a job's rules reach them), and reads
them back from the shards' snapshots in the progress topic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers import amqp
from dualplane.brokers.amqp.messages import (
    ControlMessage,
    JobSpec,
    MonitorAction,
    MonitorCommand,
    MonitorSpec,
    new_id,
    visit_job_id,
)
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.exceptions import UnknownMonitor
from dualplane.control_plane.frontier.progress import ProgressReader
from dualplane.control_plane.frontier.submit import submit_job
from dualplane.core.settings import Settings

MoreVisitSeeds = Callable[[JobSpec], int]
"""Submits seeds of a later visit's job (the monitor's sitemaps read again, e.g. with
:meth:`~control_plane.frontier.client.JobClient.seed_from_sitemaps`); returns how many."""


class MonitorClient:
    """Creates monitors, sends them commands and reads their snapshots, against ``settings``' brokers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def create(
        self, spec: MonitorSpec, seeds: Iterable[str], on_seed: Callable[[int], None] | None = None
    ) -> int:
        """The monitor to every shard, then its first visit as a crawl job with ``seeds``; the seeds
        sent. Seeds from sitemaps follow with ``JobClient.seed_from_sitemaps(spec.job, …)``."""
        with self._channel() as (channel, topology):
            self._to_shards(channel, topology, spec)
            return submit_job(channel, topology, spec.job, seeds, on_seed)

    def command(self, monitor_id: str, action: MonitorAction, visit: int | None = None) -> None:
        """Pause, resume, delete or visit the monitor on every shard."""
        with self._channel() as (channel, topology):
            self._to_shards(
                channel, topology, MonitorCommand(monitor_id=monitor_id, action=action, visit=visit)
            )

    def visit(self, monitor_id: str, more: MoreVisitSeeds | None = None) -> str:
        """Every scheduled URL of the monitor due now, in its next visit; that visit's job id.

        ``more`` submits seeds of the visit first (its sitemaps read again): their ``lastmod`` reaches
        the schedule before the URLs fall due, so a page the sitemap says did not change is skipped.
        """
        found = self.monitor(monitor_id)
        number = int(found["visit"]) + 1
        job = JobSpec.model_validate(found["spec"]["job"]).model_copy(
            update={"job_id": visit_job_id(monitor_id, number)}
        )
        # Each step confirmed before the next: the shards get the job, its seeds, then the command.
        with self._channel() as (channel, topology):
            self._to_shards(channel, topology, job)
        if more is not None:
            more(job)
        with self._channel() as (channel, topology):
            self._to_shards(
                channel, topology, MonitorCommand(monitor_id=monitor_id, action="visit", visit=number)
            )
        return str(job.job_id)

    def monitors(self) -> dict[str, dict[str, Any]]:
        """Every monitor's newest snapshot, the shards added up, by id."""
        with ProgressReader(self.settings) as reader:
            return reader.monitors()

    def monitor(self, monitor_id: str) -> dict[str, Any]:
        """One monitor's snapshot; :class:`UnknownMonitor` if no shard published it."""
        found = self.monitors().get(monitor_id)
        if found is None:
            raise UnknownMonitor(
                f"no monitor {monitor_id!r}: `dualplane monitor list` shows those the frontier shards "
                "published (is the frontier running? a new monitor shows within a few seconds)"
            )
        return found

    @contextmanager
    def _channel(self) -> Iterator[tuple[BlockingChannel, Topology]]:
        connection = amqp.connect(self.settings.amqp)
        try:
            topology = Topology(self.settings.queues)
            channel = confirmed_channel(connection)
            topology.declare(channel)
            yield channel, topology
        finally:
            connection.close()

    def _to_shards(self, channel: BlockingChannel, topology: Topology, message: ControlMessage) -> None:
        for shard in range(topology.shards):
            publish(channel, topology.discovery_exchange, str(shard), message, message_id=new_id())
