"""``dualplane run SERVICE… | all [--processes N] [--shard I…]``: run services until interrupted."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.logging import RichHandler

from core import logs
from core.settings import LogFormat, Settings
from dualplane.cli.output import stderr
from dualplane.processes import run_processes
from dualplane.services import SERVICE_NAMES, run_services


def run(
    services: Annotated[
        list[str], typer.Argument(help=f"Services to run: {', '.join(SERVICE_NAMES)}, or all.")
    ],
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    heartbeat_file: Annotated[
        Path | None,
        typer.Option(help="Touch this file every 2 s while every service runs (for healthchecks)."),
    ] = None,
    processes: Annotated[
        int, typer.Option(min=1, help="Run this many processes of the services (one machine, all its cores).")
    ] = 1,
    shard: Annotated[
        list[int] | None,
        typer.Option(
            help="Frontier shards to serve (repeat); default all of DUALPLANE_QUEUE_FRONTIER_SHARDS."
        ),
    ] = None,
) -> None:
    """Run services until Ctrl-C or SIGTERM (then they stop cleanly); with --processes N, in N child
    processes (frontier shards are divided among them), each restarted never: one that dies stops all."""
    names = list(SERVICE_NAMES) if "all" in services else services
    unknown = [name for name in names if name not in SERVICE_NAMES]
    if unknown:
        raise typer.BadParameter(
            f"unknown service(s) {', '.join(unknown)}; choose from {', '.join(SERVICE_NAMES)} or all"
        )
    settings = Settings.from_env()
    shards = _shards(settings, shard)
    if processes > 1:
        raise typer.Exit(run_processes(names, processes, shards, log_level, heartbeat_file))
    configure_logging(log_level, settings.log.format)
    run_services(settings, names, shards, heartbeat=heartbeat_file)


def _shards(settings: Settings, chosen: list[int] | None) -> list[int] | None:
    total = settings.queues.frontier_shards
    bad = [shard for shard in chosen or () if not 0 <= shard < total]
    if bad:
        raise typer.BadParameter(
            f"shard(s) {bad} do not exist: DUALPLANE_QUEUE_FRONTIER_SHARDS={total} has shards 0..{total - 1}",
            param_hint="--shard",
        )
    return chosen or None


def configure_logging(level: str, log_format: LogFormat = "text") -> None:
    """Rich output on a terminal; plain one-line records (with time and process) in files and compose
    logs; one JSON object per line with ``DUALPLANE_LOG_FORMAT=json`` (see ``core.logs``)."""
    handler: logging.Handler | None = None
    if log_format == "text" and stderr.is_terminal:
        handler = RichHandler(console=stderr, show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logs.configure(level, log_format, handler)
