"""``dualplane stack up | down | status | install``: the embedded local stack."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from dualplane.cli.output import JsonOption, mark, print_json, progress, stdout, table
from dualplane.settings import Settings
from dualplane.stack import LocalStack, ServiceStatus
from dualplane.stack.kafka_dist import KafkaDistribution

app = typer.Typer(help="Run Kafka (KRaft), RabbitMQ and an S3 endpoint on loopback.")


@app.command("up")
def up(as_json: JsonOption = False) -> None:
    """Start whatever is not already running and wait until all three answer. Idempotent."""
    started = time.perf_counter()
    statuses = LocalStack(Settings.from_env()).up(progress)
    _report(statuses, as_json, f"stack up in {time.perf_counter() - started:.1f} s")


@app.command("down")
def down(as_json: JsonOption = False) -> None:
    """Stop the services `stack up` started; services it found running are left alone."""
    _report(LocalStack(Settings.from_env()).down(progress), as_json, "stack down")


@app.command("status")
def status(as_json: JsonOption = False) -> None:
    """Health, endpoint and owner of each service. Exit code 1 unless all are healthy."""
    statuses = LocalStack(Settings.from_env()).status()
    _report(statuses, as_json, "stack status")
    if not all(service.healthy for service in statuses):
        raise typer.Exit(1)


@app.command("restart")
def restart(
    service: Annotated[str, typer.Argument(help="kafka, rabbitmq or s3")],
    as_json: JsonOption = False,
) -> None:
    """Stop and start one service that `stack up` started."""
    status = LocalStack(Settings.from_env()).restart(service, progress)
    _report([status], as_json, f"{service} restarted")


@app.command("install")
def install() -> None:
    """Fetch the Kafka release's jars with mvn into the cache (stack up does this when needed)."""
    settings = Settings.from_env()
    distribution = KafkaDistribution(settings.stack.kafka_version)
    progress(
        "kafka",
        f"fetching Kafka {distribution.version} with mvn" if not distribution.installed else "cached",
    )
    distribution.install()
    progress("kafka", f"jars in {distribution.libs}")


def _report(statuses: list[ServiceStatus], as_json: bool, title: str) -> None:
    if as_json:
        print_json({"services": statuses, "healthy": all(s.healthy for s in statuses)})
        return
    rows = [[s.name, mark(s.healthy), s.endpoint, s.ownership, str(s.pid or ""), s.detail] for s in statuses]
    stdout.print(table(title, ["service", "health", "endpoint", "owner", "pid", "detail"], rows))
