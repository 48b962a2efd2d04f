"""How commands talk to people and programs: tables and progress on a terminal, JSON on request.

Results go to stdout (plain JSON with ``--json``); progress and errors go to stderr, so
``dualplane … --json | jq`` always sees clean JSON.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from dualplane.core.settings import LogFormat

stdout = Console()
stderr = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def configure_logging(level: str, log_format: LogFormat = "text") -> None:
    """Rich output on a terminal; plain one-line records (with time and process) in files and compose
    logs; one JSON object per line with ``DUALPLANE_LOG_FORMAT=json`` (see ``core.logs``). librdkafka's
    lines come through here too (``brokers.kafka.logs``), at the same level."""
    from rich.logging import RichHandler

    from dualplane.core import logs

    handler: logging.Handler | None = None
    if log_format == "text" and stderr.is_terminal:
        handler = RichHandler(console=stderr, show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logs.configure(level, log_format, handler)


def print_json(data: Any) -> None:
    """Write ``data`` (dataclasses included) as indented JSON on stdout."""
    sys.stdout.write(json.dumps(_plain(data), indent=2, default=str) + "\n")


def progress(service: str, message: str) -> None:
    stderr.print(f"[dim]{service:>9}[/dim]  {message}")


def table(title: str, columns: list[str], rows: list[list[str]]) -> Table:
    view = Table(title=title, title_justify="left")
    for column in columns:
        view.add_column(column)
    for row in rows:
        view.add_row(*row)
    return view


def mark(ok: bool) -> str:
    return "[green]ok[/green]" if ok else "[red]FAILED[/red]"


def _plain(data: Any) -> Any:
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return dataclasses.asdict(data)
    if isinstance(data, list):
        return [_plain(item) for item in data]
    if isinstance(data, dict):
        return {key: _plain(value) for key, value in data.items()}
    return data
