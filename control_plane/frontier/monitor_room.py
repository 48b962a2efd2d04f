"""The room of monitors on a shard: their commands, their due URLs and their snapshots.

:class:`~.monitors.Monitors` keeps the schedule; this room wires it to the frontier. It handles
``MonitorSpec`` (create or update) and ``MonitorCommand`` (pause, resume, delete, visit); every
``DUE_SWEEP_S`` it turns due URLs into tasks through the frontier's admission (a domain's room, the
shard's backpressure, the job's pause) and the monitor's robots.txt; after a committed pass, every
``MONITOR_SNAPSHOT_S``, it holds each monitor's snapshot for the next pass's changelog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from dualplane.brokers.amqp.messages import CrawlTask, JobSpec, MonitorCommand, MonitorSpec, visit_of
from dualplane.control_plane.frontier.admission import Admission
from dualplane.control_plane.frontier.jobs import JobSnapshots, SideRecord
from dualplane.control_plane.frontier.monitors import Monitors
from dualplane.control_plane.frontier.robots import RobotsCache
from dualplane.control_plane.frontier.rooms import Handler, Sweep

DUE_SWEEP_S = 1.0  # how often the monitors' due URLs are looked for (a bounded batch each time)
MONITOR_SNAPSHOT_S = 2.0  # counting due URLs reads the schedule's index: not every pass


class MonitorRoom:
    """The shard's monitors, as the frontier sees them."""

    def __init__(
        self,
        monitors: Monitors,
        snapshots: JobSnapshots,
        *,
        admission: Admission,
        robots: RobotsCache,
        has_room: Callable[[CrawlTask], bool],
        issue: Callable[[CrawlTask], None],
        hold: Callable[[list[SideRecord]], None],
    ) -> None:
        self.monitors = monitors
        self.snapshots = snapshots
        self.admission = admission
        self.robots = robots
        self.has_room = has_room  # the frontier's: the domain's and the shard's room, the job's pause
        self.issue = issue
        self.hold = hold  # the frontier's: records for the next pass's changelog

    def handlers(self) -> Mapping[type, Handler]:
        return {MonitorSpec: self.monitors.save, MonitorCommand: self.command}

    def sweeps(self) -> Sequence[Sweep]:
        return (
            Sweep("due", DUE_SWEEP_S, self.take_due),
            Sweep("monitor snapshot", MONITOR_SNAPSHOT_S, self.hold_snapshots, when="commit"),
        )

    def command(self, message: MonitorCommand) -> None:
        opened = self.monitors.command(message)
        if opened is not None:
            self.snapshots.mark(opened)

    def job_saved(self, job: JobSpec) -> None:
        """A job arrived: if it is a monitor's visit, the monitor's visit counter follows it."""
        visit = visit_of(job.job_id, job.monitor)
        if job.monitor is not None and visit is not None:
            self.monitors.job_visit(job.monitor, visit)

    def take_due(self) -> None:
        taken = self.monitors.take_due(self.admit_due)
        self.snapshots.mark_all(sorted(taken.jobs))
        self.snapshots.due_waiting(self.monitors.pending_visits())

    def hold_snapshots(self) -> None:
        self.hold(self.monitors.snapshots())

    def admit_due(self, task: CrawlTask) -> bool | None:
        """Issue a monitor's due URL if its domain and the shard have room and robots.txt (known now)
        allows it; False leaves it due. Never parked in the backlog: the schedule is its backlog."""
        if not self.has_room(task):
            return False  # stays due (also while its visit is paused, until it is resumed)
        monitor = self.monitors.monitor_of_job(task.job_id)
        spec = self.monitors.spec(monitor) if monitor is not None else None
        if spec is not None and spec.job.obey_robots and self.admission.safe(task.url):
            robots = self.robots.ready(task.url)
            if robots is None:
                return False  # being fetched: taken once it is known
            if not robots.allowed:
                return None
            if robots.crawl_delay_s:
                task = task.model_copy(update={"crawl_delay_ms": int(robots.crawl_delay_s * 1000)})
        self.issue(task)
        return True
