"""A frontier running on a thread for a test, plus the probes tests use to watch a job."""

from __future__ import annotations

import threading
import time
from typing import Any

import pika

from dualplane.brokers import amqp
from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier import Frontier, JobClient, MonitorClient, ProgressReader
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle import ThrottleView


class JobProbe:
    """Submit jobs and watch their progress; each call opens a fresh connection (survives restarts)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topology = Topology(settings.queues)

    def submit(self, spec: JobSpec, seeds: list[str]) -> None:
        JobClient(self.settings).submit(spec, seeds)

    def progress(self, job_id: str) -> dict[str, object]:
        with ProgressReader(self.settings) as reader:
            return reader.job(job_id) or {}

    def wait_progress(self, job_id: str, timeout_s: float = 60, **expected: int) -> dict[str, object]:
        seen: dict[str, object] = {}
        with ProgressReader(self.settings) as reader:

            def matches() -> bool:
                nonlocal seen
                seen = reader.job(job_id) or {}
                return all(seen.get(key) == value for key, value in expected.items())

            wait_for(matches, timeout_s, interval_s=0.5)
        assert {key: seen.get(key) for key in expected} == expected, seen
        return seen

    def wait_progress_at_least(self, job_id: str, counter: str, least: int, timeout_s: float = 60) -> None:
        """Wait until the job's ``counter`` reaches ``least``."""
        with ProgressReader(self.settings) as reader:
            reached = wait_for(
                lambda: int((reader.job(job_id) or {}).get(counter, 0)) >= least, timeout_s, 0.5
            )
        assert reached, f"job {job_id}: {counter} did not reach {least} within {timeout_s} s"

    def wait_finished(self, job_id: str, timeout_s: float = 180, quiet_s: float = 4) -> dict[str, object]:
        """Wait until the job is finished by the one rule everyone uses (:class:`FinishRule`)."""
        snapshot, verdict = None, None
        for snapshot, verdict in JobClient(self.settings).follow(
            job_id, timeout_s=timeout_s, quiet_s=quiet_s
        ):
            if verdict.finished:
                return snapshot or {}
        raise AssertionError(f"job {job_id} did not finish within {timeout_s} s: {snapshot}; {verdict}")

    def lane_depth(self, lane: str = "normal") -> int:
        return self.queue_depth(self.topology.lane_queue(lane))  # type: ignore[arg-type]

    def consumers(self, queue: str) -> int:
        """Consumers subscribed to ``queue`` (0 while it does not exist yet)."""
        connection = amqp.connect(self.settings.amqp)
        try:
            return int(connection.channel().queue_declare(queue, passive=True).method.consumer_count)
        except pika.exceptions.ChannelClosedByBroker:
            return 0
        finally:
            if connection.is_open:
                connection.close()

    def queue_depth(self, queue: str) -> int:
        """Messages ready (not delivered to anyone) in ``queue``."""
        connection = amqp.connect(self.settings.amqp)
        try:
            return int(connection.channel().queue_declare(queue, passive=True).method.message_count)
        finally:
            connection.close()


class RunningFrontier(JobProbe):
    """A frontier on a thread of the test process; :meth:`start` it, :meth:`stop` it."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.frontier = Frontier.from_settings(settings, ThrottleView(settings))
        self.consumer = self.frontier.consumer()
        self.thread = threading.Thread(target=self.consumer.run, daemon=True)

    def start(self) -> RunningFrontier:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.consumer.stop()
        self.thread.join(15)
        self.frontier.close()


def fresh_monitor(client: MonitorClient, monitor_id: str, timeout_s: float = 30) -> dict[str, Any]:
    """The monitor's snapshot published after this call (shards publish one every few seconds), so it
    counts every report handled before the call."""
    asked, deadline = time.time(), time.monotonic() + timeout_s
    while True:
        snapshot = client.monitor(monitor_id)
        if float(snapshot["published_at"]) > asked or time.monotonic() > deadline:
            return snapshot
        time.sleep(0.5)
