"""``dualplane run SERVICE… | all [--processes N] [--shard I…]``: run services until interrupted.

Without ``--processes`` the extractor runs in one process per usable core (it spends most of the
CPU) and the other services in one process; ``--processes N`` runs all the services named N times.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dualplane.cli import values
from dualplane.cli.namespace import NAMESPACE_ENV, NamespaceOption, settings_in
from dualplane.cli.output import configure_logging, stderr

if TYPE_CHECKING:  # imported when the command runs, so that `run --help` starts fast
    from dualplane.core.settings import Settings

# As dualplane.services.SERVICE_NAMES (checked by a test): importing it loads every service.
SERVICE_NAMES = ("frontier", "fetcher", "extractor", "throttle", "s3-sink")


def run(
    services: Annotated[
        list[str], typer.Argument(help=f"Services to run: {', '.join(SERVICE_NAMES)}, or all.")
    ],
    log_level: Annotated[
        str, typer.Option(parser=values.log_level, help="debug, info, warning or error.")
    ] = "info",
    heartbeat_file: Annotated[
        Path | None,
        typer.Option(help="Touch this file every 2 s while every service runs (for healthchecks)."),
    ] = None,
    processes: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Run the services in this many processes. Default: the extractor in one process per "
            "usable core, the other services in one more.",
            show_default=False,
        ),
    ] = None,
    shard: Annotated[
        list[int] | None,
        typer.Option(
            help="Frontier shards to serve (repeat); default all of DUALPLANE_QUEUE_FRONTIER_SHARDS."
        ),
    ] = None,
    namespace: NamespaceOption = None,
) -> None:
    """Run services until Ctrl-C or SIGTERM (then they stop cleanly); with --processes N, in N child
    processes (frontier shards are divided among them), each restarted never: one that dies stops all.

    Without --processes, the extractor runs in one child process per usable core and `pages.raw` is
    given at least that many partitions."""
    from dualplane.processes import per_core_commands, run_children, run_processes, usable_cores

    names = list(SERVICE_NAMES) if "all" in services else services
    unknown = [name for name in names if name not in SERVICE_NAMES]
    if unknown:
        raise typer.BadParameter(
            f"unknown service(s) {', '.join(unknown)}; choose from {', '.join(SERVICE_NAMES)} or all"
        )
    settings = settings_in(namespace)
    if namespace is not None:  # child processes are `dualplane run` too: they read it from there
        os.environ[NAMESPACE_ENV] = namespace
    if "extractor" in names:
        check_extractor_settings(settings)
    shards = _shards(settings, shard)
    cores = usable_cores() if processes is None and "extractor" in names else 1
    if processes is None and cores > 1:
        _partitions_for(settings, cores)
        commands = per_core_commands(names, cores, log_level, shards)
        raise typer.Exit(run_children(commands, heartbeat_file))
    if processes is not None and processes > 1:
        if "extractor" in names:
            _partitions_for(settings, processes)
        raise typer.Exit(run_processes(names, processes, shards, log_level, heartbeat_file))
    from dualplane.services import run_services

    configure_logging(log_level, settings.log.format)
    run_services(settings, names, shards, heartbeat=heartbeat_file)


def check_extractor_settings(settings: Settings) -> None:
    """Refuse to start an extractor whose settings name a schema version or a plugin it lacks."""
    from dualplane.core.exceptions import ConfigurationError
    from dualplane.data_plane.extractor import configuration_problems

    problems = configuration_problems(settings.extract)
    if problems:
        raise ConfigurationError("; ".join(problems))


def _partitions_for(settings: Settings, extractors: int) -> None:
    """Give ``pages.raw`` a partition per extractor process (Kafka shares partitions, not messages)."""
    from dualplane.brokers.kafka.topics import ensure_data_plane_topics

    grown = ensure_data_plane_topics(settings, pages_raw_partitions=extractors)
    if grown:
        stderr.print(
            f"{settings.topics.pages_raw}: partitions {grown[0]} -> {grown[1]} for {extractors} extractors"
        )


def _shards(settings: Settings, chosen: list[int] | None) -> list[int] | None:
    total = settings.queues.frontier_shards
    bad = [shard for shard in chosen or () if not 0 <= shard < total]
    if bad:
        raise typer.BadParameter(
            f"shard(s) {bad} do not exist: DUALPLANE_QUEUE_FRONTIER_SHARDS={total} has shards 0..{total - 1}",
            param_hint="--shard",
        )
    return chosen or None
