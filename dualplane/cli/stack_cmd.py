"""``dualplane stack up | down | status | install``: the embedded local stack."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from dualplane.cli.output import JsonOption, mark, print_json, progress, stdout, table
from dualplane.core.settings import Settings
from dualplane.stack import LocalStack, ServiceStatus
from dualplane.stack.exceptions import PrerequisiteMissing
from dualplane.stack.kafka_dist import KafkaDistribution
from dualplane.stack.schema_registry import CRATE, RegistryDistribution

app = typer.Typer(help="Run Kafka (KRaft), RabbitMQ and an S3 endpoint on loopback.")


WithRegistry = Annotated[
    bool,
    typer.Option(
        "--with-registry",
        help="Also run the local schema registry (Schema Registry mode: DUALPLANE_SCHEMA_REGISTRY_URL).",
    ),
]


@app.command("up")
def up(as_json: JsonOption = False, with_registry: WithRegistry = False) -> None:
    """Start whatever is not already running and wait until all three answer. Idempotent."""
    started = time.perf_counter()
    statuses = LocalStack(Settings.from_env(), with_registry=with_registry).up(progress)
    _report(statuses, as_json, f"stack up in {time.perf_counter() - started:.1f} s")


@app.command("down")
def down(as_json: JsonOption = False) -> None:
    """Stop the services `stack up` started; services it found running are left alone."""
    _report(LocalStack(Settings.from_env()).down(progress), as_json, "stack down")


@app.command("status")
def status(as_json: JsonOption = False) -> None:
    """Health (ok, stopped, FAILED), endpoint and owner of each service; exit 1 unless all are healthy."""
    statuses = LocalStack(Settings.from_env()).status()
    _report(statuses, as_json, "stack status")
    if not all(service.healthy for service in statuses):
        raise typer.Exit(1)


@app.command("restart")
def restart(
    service: Annotated[str, typer.Argument(help="kafka, rabbitmq, s3 or schema-registry")],
    as_json: JsonOption = False,
) -> None:
    """Stop and start one service that `stack up` started."""
    status = LocalStack(Settings.from_env()).restart(service, progress)
    _report([status], as_json, f"{service} restarted")


@app.command("install")
def install(
    with_registry: Annotated[
        bool, typer.Option(help="Also build the optional schema registry with cargo (minutes, once).")
    ] = False,
) -> None:
    """Fetch the Kafka release's jars with mvn (and build the schema registry with cargo) into the cache."""
    settings = Settings.from_env()
    distribution = KafkaDistribution(settings.stack.kafka_version)
    progress(
        "kafka",
        f"fetching Kafka {distribution.version} with mvn" if not distribution.installed else "cached",
    )
    distribution.install()
    progress("kafka", f"jars in {distribution.libs}")
    if with_registry:
        _install_registry()


def _install_registry() -> None:
    """Optional, like the service: a machine without cargo gets a warning, not a failed setup."""
    registry = RegistryDistribution()
    if not registry.installed:
        progress("schema-registry", f"building {CRATE} {registry.version} with cargo (minutes; once)")
    try:
        registry.install()
    except PrerequisiteMissing as error:
        progress("schema-registry", f"skipped: {error}")
        return
    progress("schema-registry", f"binary {registry.binary}")


def _health(status: ServiceStatus) -> str:
    """A stack stopped on request reads "stopped", not FAILED: only what `up` started and lost fails."""
    return "[yellow]stopped[/yellow]" if status.state == "stopped" else mark(status.healthy)


def _report(statuses: list[ServiceStatus], as_json: bool, title: str) -> None:
    if as_json:
        print_json({"services": statuses, "healthy": all(s.healthy for s in statuses)})
        return
    rows = [[s.name, _health(s), s.endpoint, s.ownership, str(s.pid or ""), s.detail] for s in statuses]
    stdout.print(table(title, ["service", "health", "endpoint", "owner", "pid", "detail"], rows))
