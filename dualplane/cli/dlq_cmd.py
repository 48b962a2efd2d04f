"""``dualplane dlq list | redrive``: inspect dead letters and send fixed ones back."""

from __future__ import annotations

from typing import Annotated

import typer

from dualplane.brokers import amqp
from dualplane.brokers.amqp.dead_letters import DeadLetter, list_dead_letters, redrive
from dualplane.brokers.amqp.publisher import confirmed_channel
from dualplane.brokers.amqp.topology import Topology
from dualplane.cli import values
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stdout, table

app = typer.Typer(help="Dead letters: messages that could not be handled, with the reason.")


@app.command("list")
def list_(
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many.")] = 100,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Show dead letters (oldest first) without removing them."""
    settings = settings_in(namespace)
    connection = amqp.connect(settings.amqp)
    try:
        channel = connection.channel()
        Topology(settings.queues).declare(channel)
        letters = list_dead_letters(channel, Topology(settings.queues), limit)
    finally:
        connection.close()
    if as_json:
        print_json(letters)
        return
    rows = [[d.failed_at, d.kind or "?", d.job_id or "", d.source_queue, d.reason] for d in letters]
    stdout.print(
        table(f"{len(letters)} dead letter(s)", ["failed at", "kind", "job", "from", "reason"], rows)
    )


@app.command("redrive")
def redrive_(
    job: Annotated[
        str | None, typer.Option("--job", parser=values.non_empty, help="Only this job's dead letters.")
    ] = None,
    reason: Annotated[
        str | None, typer.Option(parser=values.non_empty, help="Only those whose reason contains this text.")
    ] = None,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Send dead letters back to where they failed (after you fixed the cause)."""
    settings = settings_in(namespace)

    def matches(letter: DeadLetter) -> bool:
        return (job is None or letter.job_id == job) and (reason is None or reason in letter.reason)

    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        Topology(settings.queues).declare(channel)
        redriven, left = redrive(channel, Topology(settings.queues), matches)
    finally:
        connection.close()
    if as_json:
        print_json({"redriven": redriven, "left": left})
    else:
        stdout.print(f"redriven {redriven}, left {left} in the dead-letter queue")
