"""``dualplane status``: queue depths of the control plane, the data plane's consumer lag and, with
``--job``, a job's progress."""

from __future__ import annotations

from typing import Annotated

import typer

from connectors.sink.lag import sink_lag
from control_plane import amqp
from control_plane.amqp.management import queue_stats
from control_plane.amqp.topology import Topology
from control_plane.frontier.jobs import read_progress
from data_plane.kafka.lag import extractor_lag
from dualplane.cli.output import JsonOption, print_json, stdout, table
from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import Settings


def status(
    job: Annotated[str | None, typer.Option("--job", help="Show this job's progress counters.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Queue depths and consumers of the control plane, consumer lag; a job's counters with --job."""
    settings = Settings.from_env()
    prefix = settings.queues.crawl_tasks.split(".")[0]
    queues = queue_stats(settings.amqp, prefix)
    lag = _lag(settings)
    progress = _job_progress(settings, job) if job else None
    if as_json:
        print_json({"queues": queues, "lag": lag, "job": progress})
        return
    rows = [
        [q.name, str(q.ready), str(q.unacked), str(q.consumers), f"{q.deliver_rate:.1f}/s"] for q in queues
    ]
    stdout.print(table("queues", ["queue", "ready", "in flight", "consumers", "delivered"], rows))
    lag_rows = [[str(row["consumer"]), str(row["topic"]), str(row["lag"])] for row in lag]
    stdout.print(table("consumer lag (records not committed yet)", ["consumer", "topic", "lag"], lag_rows))
    if progress is not None:
        stdout.print(table(f"job {job}", ["counter", "value"], [[k, str(v)] for k, v in progress.items()]))


def _lag(settings: Settings) -> list[dict[str, object]]:
    """The extractor's lag on pages.raw and the S3 sink's per topic; ``None`` where Kafka did not answer."""
    rows: list[dict[str, object]] = []
    try:
        rows.append(
            {"consumer": "extractor", "topic": settings.topics.pages_raw, "lag": extractor_lag(settings)}
        )
        rows += [{"consumer": "s3-sink", "topic": t, "lag": n} for t, n in sink_lag(settings).items()]
    except Exception as error:  # status must still show the control plane when Kafka is away
        rows.append({"consumer": "(kafka)", "topic": "-", "lag": None, "error": str(error)})
    return rows


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
