"""``dualplane run SERVICE… | all``: run long-lived services until interrupted."""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from rich.logging import RichHandler

from dualplane.cli.output import stderr
from dualplane.services import REGISTRY, run_services
from dualplane.settings import Settings


def run(
    services: Annotated[list[str], typer.Argument(help=f"Services to run: {', '.join(REGISTRY)}, or all.")],
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Run services in this process until Ctrl-C or SIGTERM (then they stop cleanly)."""
    names = list(REGISTRY) if "all" in services else services
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise typer.BadParameter(
            f"unknown service(s) {', '.join(unknown)}; choose from {', '.join(REGISTRY)} or all"
        )
    logging.basicConfig(
        level=log_level.upper(),
        format="%(name)s: %(message)s",
        handlers=[RichHandler(console=stderr, show_path=False)],
    )
    logging.getLogger("pika").setLevel(logging.WARNING)
    run_services(Settings.from_env(), names)
