"""``dualplane status``: queue depths of the control plane and, with ``--job``, a job's progress."""

from __future__ import annotations

from typing import Annotated

import typer

from control_plane import amqp
from control_plane.amqp.management import queue_stats
from control_plane.amqp.topology import Topology
from control_plane.frontier.jobs import read_progress
from dualplane.cli.output import JsonOption, print_json, stdout, table
from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import Settings


def status(
    job: Annotated[str | None, typer.Option("--job", help="Show this job's progress counters.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Queue depths and consumers of the control plane; a job's counters with --job."""
    settings = Settings.from_env()
    prefix = settings.queues.crawl_tasks.split(".")[0]
    queues = queue_stats(settings.amqp, prefix)
    progress = _job_progress(settings, job) if job else None
    if as_json:
        print_json({"queues": queues, "job": progress})
        return
    rows = [
        [q.name, str(q.ready), str(q.unacked), str(q.consumers), f"{q.deliver_rate:.1f}/s"] for q in queues
    ]
    stdout.print(table("queues", ["queue", "ready", "in flight", "consumers", "delivered"], rows))
    if progress is not None:
        stdout.print(table(f"job {job}", ["counter", "value"], [[k, str(v)] for k, v in progress.items()]))


def _job_progress(settings: Settings, job_id: str) -> dict[str, object]:
    connection = amqp.connect(settings.amqp)
    try:
        snapshot = read_progress(connection.channel(), Topology(settings.queues), job_id)
    finally:
        connection.close()
    if snapshot is None:
        raise DualplaneError(
            f"no progress for job {job_id!r} yet: is the frontier running (`dualplane run frontier`) "
            "and was the job submitted with `dualplane crawl`?"
        )
    return snapshot
