"""Following a job to its end (``crawl --wait``), riding through broker restarts.

A restart of RabbitMQ or Kafka while a job runs is expected (the services reconnect); the command
following it must not die with a traceback either. A look that fails is shown on the progress line
and retried with a fresh reader, until the job is finished or the timeout passes.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pika.exceptions
from confluent_kafka import KafkaException
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from control_plane.frontier.jobs import FinishRule, Verdict, finished_count, remaining
from control_plane.frontier.progress import ProgressReader
from core.settings import Settings
from dualplane.cli.output import stderr

BROKER_ERRORS = (pika.exceptions.AMQPError, KafkaException, OSError)
LOOK_EVERY_S = 1.0


class _Reader:
    """A :class:`ProgressReader` made again after any failure (Kafka may be restarting)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.reader: ProgressReader | None = None

    def job(self, job_id: str) -> dict[str, Any] | None:
        if self.reader is None:
            self.reader = ProgressReader(self.settings)
        return self.reader.job(job_id)

    def drop(self) -> None:
        reader, self.reader = self.reader, None
        if reader is not None:
            with contextlib.suppress(*BROKER_ERRORS):
                reader.close()


def follow(
    settings: Settings, job_id: str, timeout_s: float, seeds: int | None = None
) -> tuple[dict[str, Any] | None, Verdict]:
    """Show progress until the job is finished (:class:`FinishRule`, told the ``seeds`` submitted)
    or ``timeout_s`` passes; the last snapshot read (None if none could be) and the last verdict."""
    deadline = time.monotonic() + timeout_s
    rule = FinishRule.from_settings(settings, seeds=seeds)
    reader = _Reader(settings)
    snapshot: dict[str, Any] | None = None
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=stderr, transient=True) as progress:
            bar = progress.add_task(f"crawling {job_id}", total=None)
            while time.monotonic() < deadline:
                try:
                    snapshot = reader.job(job_id) or snapshot
                    if snapshot:
                        finished = finished_count(snapshot)
                        progress.update(bar, completed=finished, total=finished + remaining(snapshot))
                    if rule.finished(snapshot):
                        break
                    progress.update(bar, description=f"crawling {job_id} ({rule.verdict.why})")
                except BROKER_ERRORS as error:
                    reader.drop()
                    why = f"{type(error).__name__}; retrying"
                    progress.update(bar, description=f"crawling {job_id} (brokers unreachable: {why})")
                time.sleep(LOOK_EVERY_S)
    finally:
        reader.drop()
    return snapshot, rule.verdict
