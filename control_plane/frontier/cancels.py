"""Cancelled jobs for the fetchers: read from the jobs' progress snapshots, which carry the cancel.

A shard that takes a :class:`~brokers.amqp.messages.JobCancel` writes the job's ``cancelled_at``
to its state and changelog, and its next progress snapshot carries it (``jobs.progress``, a
compacted topic): so a fetcher started after the cancel learns it too, from the topic's beginning.
:class:`CancelledJobsView` follows that topic on a thread of its own (every ``every_s``) and
answers :meth:`cancelled` from memory; it is the fleet's :class:`core.jobs.CancelledJobs`. Paused
jobs (``job pause``, the snapshot's ``paused_at``) come the same way: :meth:`paused`.
"""

from __future__ import annotations

import logging
import threading

from dualplane.control_plane.frontier.progress import ProgressReader
from dualplane.core.settings import Settings

log = logging.getLogger(__name__)

FOLLOW_EVERY_S = 1.0


class CancelledJobsView:
    """The jobs some frontier shard called cancelled, kept current from ``jobs.progress``."""

    def __init__(self, settings: Settings, every_s: float = FOLLOW_EVERY_S) -> None:
        self.settings = settings
        self.every_s = every_s
        self._cancelled: frozenset[str] = frozenset()
        self._paused: frozenset[str] = frozenset()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cancelled-jobs", daemon=True)

    def start(self, timeout_s: float = 30.0) -> CancelledJobsView:
        """Read the topic to its end once (then keep following it); returns at once when started."""
        if not self._thread.is_alive():
            self._thread.start()
        if not self._ready.wait(timeout_s):
            log.warning("cancelled jobs: %s not read within %.0f s; going on without", self.topic, timeout_s)
        return self

    @property
    def topic(self) -> str:
        return self.settings.topics.job_progress

    def cancelled(self, job_id: str) -> bool:
        return job_id in self._cancelled  # a frozenset swapped whole: no lock needed

    def paused(self, job_id: str) -> bool:
        return job_id in self._paused

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        reader: ProgressReader | None = None
        while not self._stop.is_set():
            try:
                reader = reader or ProgressReader(self.settings)
                reader.refresh()
                self._cancelled = frozenset(reader.cancelled())
                self._paused = frozenset(reader.paused())
                self._ready.set()
            except Exception as error:  # Kafka away: keep what is known, read again with a new reader
                log.warning("cancelled jobs: reading %s failed (%r); retrying", self.topic, error)
                if reader is not None:
                    reader.close()
                reader = None
            self._stop.wait(self.every_s)
        if reader is not None:
            reader.close()
