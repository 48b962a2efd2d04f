"""Following a job to its end (``crawl --wait``) on a progress bar, riding through broker restarts.

A restart of RabbitMQ or Kafka while a job runs is expected (the services reconnect); the command
following it must not die with a traceback either: the job client's looks say so on the progress
line and go on with a fresh reader, until the job is finished, cancelled or stalled, or the timeout
passes (the job client's :meth:`~control_plane.frontier.client.JobClient.wait` decides which).
"""

from __future__ import annotations

from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dualplane.cli.output import stderr
from dualplane.control_plane.frontier import JobClient, Look, Verdict, finished_count, remaining
from dualplane.core.settings import Settings

LOOK_EVERY_S = 1.0


def follow(
    settings: Settings, job_id: str, timeout_s: float, seeds: int | None = None
) -> tuple[dict[str, Any] | None, Verdict]:
    """Show progress until the job is over (:class:`FinishRule`, told the ``seeds`` submitted) or
    ``timeout_s`` passes; the last snapshot read (None if none could be) and the last verdict."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr, transient=True) as progress:
        bar = progress.add_task(f"crawling {job_id}", total=None)

        def show(look: Look) -> None:
            snapshot, verdict = look
            if snapshot:
                finished = finished_count(snapshot)
                progress.update(bar, completed=finished, total=finished + remaining(snapshot))
            progress.update(bar, description=f"crawling {job_id} ({verdict.why})")

        jobs = JobClient(settings)
        return jobs.wait(job_id, timeout_s=timeout_s, seeds=seeds, on_look=show, every_s=LOOK_EVERY_S)


def verdict_fields(verdict: Verdict | None) -> dict[str, Any]:
    """How a followed job ended, for ``--json`` (nothing when it was not followed)."""
    if verdict is None:
        return {}
    return {
        "finished": verdict.finished, "complete": verdict.complete, "why": verdict.why,
        "records": verdict.records, "dead_lettered": verdict.dead_lettered,
    }  # fmt: skip
