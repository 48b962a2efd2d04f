"""The room of a user's hold on a job: ``job cancel``, ``job pause`` and ``job resume``.

A cancel or pause is written to the shard's state (and so its changelog) in the pass that handles
it; the job's next progress snapshot carries it to the fetchers (``cancels``) and to followers. A
resume releases the job's parked backlog at once rather than at the next backlog sweep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from dualplane.brokers.amqp.messages import JobCancel, JobPause
from dualplane.control_plane.frontier.jobs import JobSnapshots
from dualplane.control_plane.frontier.rooms import Handler, Sweep
from dualplane.control_plane.frontier.store import FrontierState


class JobControl:
    """Cancels, pauses and resumes of the shard's jobs."""

    def __init__(
        self, state: FrontierState, snapshots: JobSnapshots, release_backlog: Callable[[str], None]
    ) -> None:
        self.state = state
        self.snapshots = snapshots
        self.release_backlog = release_backlog  # the frontier's: issues what the domain has room for

    def handlers(self) -> Mapping[type, Handler]:
        return {JobCancel: self.cancel, JobPause: self.pause}

    def sweeps(self) -> Sequence[Sweep]:
        return ()  # a paused job's tasks wait in the backlog, whose sweep is the frontier's

    def cancel(self, message: JobCancel) -> None:
        if self.state.cancel_job(message.job_id, message.cancelled_at.timestamp()):
            self.snapshots.mark(message.job_id)

    def pause(self, message: JobPause) -> None:
        """A pause or a resume (``message.paused``); the snapshot tells fetchers and followers."""
        if self.state.pause_job(message.job_id, message.paused, message.at.timestamp()):
            self.snapshots.mark(message.job_id)
            if not message.paused:  # its backlog goes out now, not at the next sweep
                for domain in self.state.backlog_domains(message.job_id):
                    self.release_backlog(domain)
