"""Which jobs one fetcher must start no fetch for, and when it may say so to ``job cancel --wait``
and ``job pause --wait``.

A job is cancelled here once the fleet's view says so (:class:`~core.jobs.CancelledJobs`, read from
the progress snapshots) or once a cancel was broadcast to this fetcher
(:mod:`brokers.amqp.fetch_control`). The broadcast is answered only when none of the job's fetches
runs here any more: after the answer, this fetcher sends no request of the job. A paused job is
known the same way (:meth:`paused`), except that a pause ends: a broadcast pause or resume overrides
the view only until the view says the same, so a resume reaches this fetcher either way.
Used on the runner's connection thread only.
"""

from __future__ import annotations

from collections import Counter

from dualplane.core.jobs import CancelledJobs

Reply = tuple[str, str]
"""Where to answer a broadcast cancel: (reply_to, correlation_id)."""


class FetcherCancels:
    """Cancelled jobs as this fetcher knows them, its running fetches per job, and answers owed."""

    def __init__(self, view: CancelledJobs) -> None:
        self.view = view
        self.heard: set[str] = set()  # broadcast to this fetcher (the view may learn it later)
        self.pause_heard: dict[str, bool] = {}  # broadcast pauses (True) and resumes the view lags on
        self.running: Counter[str] = Counter()
        self.owed: dict[str, list[Reply]] = {}

    def cancelled(self, job_id: str) -> bool:
        return job_id in self.heard or self.view.cancelled(job_id)

    def heard_cancel(self, job_id: str, reply: Reply) -> list[Reply]:
        """A broadcast cancel: the answers due now (none while a fetch of the job runs here)."""
        self.heard.add(job_id)
        self.owed.setdefault(job_id, []).append(reply)
        return self._due(job_id)

    def paused(self, job_id: str) -> bool:
        in_view = self.view.paused(job_id)
        heard = self.pause_heard.get(job_id)
        if heard is None:
            return in_view
        if heard == in_view:  # the fleet's view caught up: it rules again
            del self.pause_heard[job_id]
        return heard

    def heard_pause(self, job_id: str, paused: bool, reply: Reply) -> list[Reply]:
        """A broadcast pause (or resume): the answers due now (none while a fetch of the job runs
        here; a resume is not answered)."""
        self.pause_heard[job_id] = paused
        if not paused:
            return []
        self.owed.setdefault(job_id, []).append(reply)
        return self._due(job_id)

    def started(self, job_id: str) -> None:
        self.running[job_id] += 1

    def ended(self, job_id: str) -> list[Reply]:
        """A fetch of ``job_id`` ended (or was dropped before it started): the answers due now."""
        self.running[job_id] -= 1
        if self.running[job_id] <= 0:
            del self.running[job_id]
        return self._due(job_id)

    def reset(self) -> None:
        """A new connection: the fetches of the old one no longer count, and the answers owed on it
        are not sent (the waiting side broadcasts again); pauses heard on it give way to the view (a
        resume broadcast while disconnected is not heard)."""
        self.running.clear()
        self.owed.clear()
        self.pause_heard.clear()

    def _due(self, job_id: str) -> list[Reply]:
        if self.running.get(job_id, 0) > 0:
            return []
        return self.owed.pop(job_id, [])
