"""``dualplane run SERVICE… | all``: run long-lived services until interrupted."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.logging import RichHandler

from dualplane.cli.output import stderr
from dualplane.core.settings import Settings
from dualplane.services import REGISTRY, run_services


def run(
    services: Annotated[list[str], typer.Argument(help=f"Services to run: {', '.join(REGISTRY)}, or all.")],
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    heartbeat_file: Annotated[
        Path | None,
        typer.Option(help="Touch this file every 2 s while every service runs (for healthchecks)."),
    ] = None,
) -> None:
    """Run services in this process until Ctrl-C or SIGTERM (then they stop cleanly)."""
    names = list(REGISTRY) if "all" in services else services
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise typer.BadParameter(
            f"unknown service(s) {', '.join(unknown)}; choose from {', '.join(REGISTRY)} or all"
        )
    configure_logging(log_level)
    run_services(Settings.from_env(), names, heartbeat=heartbeat_file)


def configure_logging(level: str) -> None:
    """Rich output on a terminal; plain one-line records (with time and process) in files and compose logs."""
    if stderr.is_terminal:
        handler: logging.Handler = RichHandler(console=stderr, show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    # One line per request or per AMQP frame drowns what matters; their warnings still show.
    for noisy in ("pika", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
