"""``dualplane cluster …``: bringing replication back after a broker is lost for good."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dualplane.cli.output import stderr

app = typer.Typer(
    help="Bring replication back after a broker is lost for good (docs/multi-machine.md).",
    no_args_is_help=True,
    add_completion=False,
)


@app.command("reassignment")
def reassignment(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the plan here instead of stdout.")
    ] = None,
) -> None:
    """Print the partition reassignment that moves every replica off Kafka brokers that are gone.

    The JSON is Kafka's reassignment format: hand it to
    `dualplane kafka reassign-partitions --reassignment-json-file FILE --execute` (or the
    kafka-reassign-partitions.sh of a broker's image). Empty `partitions`: nothing to move.
    """
    from dualplane.brokers.kafka.reassignment import reassignment_plan
    from dualplane.core.settings import Settings

    plan = reassignment_plan(Settings.from_env().kafka)
    text = json.dumps(plan, indent=1)
    moves = plan["partitions"]
    topics = len({move["topic"] for move in moves})
    stderr.print(f"{len(moves)} partition(s) of {topics} topic(s) move off brokers that are gone")
    if output is None:
        typer.echo(text)
    else:
        output.write_text(text + "\n")
