"""``dualplane namespace list | drop``: the namespaces on the brokers, and removing one for good."""

from __future__ import annotations

import shutil
from typing import Annotated

import typer

from dualplane.cli.output import JsonOption, print_json, stdout, table

app = typer.Typer(help="Namespaces: private sets of topics and queues on shared brokers.")

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The namespace, as --namespace takes it.")]


@app.command("list")
def list_(as_json: JsonOption = False) -> None:
    """The namespaces that have topics on Kafka, with their topic count."""
    from dualplane.brokers.kafka import clients
    from dualplane.core.settings import Settings
    from dualplane.namespaces import namespaces_in

    settings = Settings.from_env()
    found = namespaces_in(clients.admin(settings.kafka).list_topics(timeout=10).topics)
    if as_json:
        print_json([{"namespace": name, "topics": count} for name, count in sorted(found.items())])
        return
    rows = [[name, str(count)] for name, count in sorted(found.items())]
    stdout.print(table(f"{len(rows)} namespace(s)", ["namespace", "topics"], rows))


@app.command("drop")
def drop(
    name: NameArgument,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete its topics, queues and state.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a namespace's Kafka topics, RabbitMQ queues and exchanges, and its frontier state. Its
    records go with its topics: export them first. Stop the services running in it first."""
    from dualplane.core.settings import Settings
    from dualplane.namespaces import drop_namespace, named_namespace

    try:
        settings = named_namespace(Settings.from_env(), name)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="NAME") from None
    if not yes:
        raise typer.BadParameter(
            f"this deletes every topic, queue and record of namespace {name!r}; add --yes to go on",
            param_hint="--yes",
        )
    drop_namespace(settings)
    state = settings.frontier.data_dir
    if state is not None and state.exists():
        shutil.rmtree(state.parent, ignore_errors=True)  # <data dir>/<name>/frontier: the whole <name>
    if as_json:
        print_json({"namespace": name, "dropped": True})
        return
    stdout.print(f"namespace {name}: topics, queues and frontier state deleted")
