"""What a fetcher needs to know of jobs, and the contract of whatever keeps it current.

A cancelled job's tasks still sitting in the lanes are dropped unfetched, and a paused job's are
sent back unfetched: a fetcher asks a :class:`CancelledJobs` before it starts a task. The frontier
stage implements it
(``control_plane.frontier.cancels.CancelledJobsView``, from the jobs' progress snapshots), and the
services registry wires one into each fetcher, so the fetcher never imports the frontier.
"""

from __future__ import annotations

from typing import Protocol


class CancelledJobs(Protocol):
    """The jobs cancelled (and those paused) so far, kept current by someone else; every method is
    thread-safe."""

    def start(self) -> object:
        """Block until the cancels made so far are known."""
        ...

    def cancelled(self, job_id: str) -> bool:
        """Whether ``job_id`` was cancelled (as far as known now)."""
        ...

    def paused(self, job_id: str) -> bool:
        """Whether ``job_id`` is paused now (as far as known now)."""
        ...

    def close(self) -> None:
        """Stop keeping the list current."""
        ...


class NoCancels:
    """No job is ever cancelled or paused: for a fetcher run without a frontier (tests, benchmarks)."""

    def start(self) -> NoCancels:
        return self

    def cancelled(self, job_id: str) -> bool:
        return False

    def paused(self, job_id: str) -> bool:
        return False

    def close(self) -> None:
        pass
