"""``dualplane kafka TOOL …``: Kafka's own command-line tools, from the stack's release."""

from __future__ import annotations

from typing import Annotated

import typer

from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import Settings
from dualplane.stack.kafka_tools import TOOLS, run_tool


def kafka(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help=f"One of: {', '.join(TOOLS)}.")],
) -> None:
    """Run a Kafka command-line tool, e.g. `dualplane kafka topics --list`.

    --bootstrap-server (and SASL/TLS settings) come from DUALPLANE_KAFKA_* unless given.
    """
    if tool not in TOOLS:
        raise DualplaneError(f"unknown Kafka tool {tool!r}; choose one of: {', '.join(TOOLS)}")
    raise typer.Exit(run_tool(Settings.from_env(), tool, list(ctx.args)))
