"""One grammar for every command (docs/cli.md): the test walks the whole CLI tree and fails on a
command that breaks a rule. A new command is held to the rules the day it is added; an exemption
is written here with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import typer
from typer import _click as click

from dualplane.cli.main import COMMANDS

pytestmark = pytest.mark.unit

# Commands that touch no topic or queue of a namespace.
NO_NAMESPACE = {
    "demo": "runs in its own namespace, demo",
    "sample-site": "serves a local site; no broker",
    "extract": "offline: saved files in, records out",
    "kafka": "Kafka's own tools, arguments passed through",
    "config show": "prints settings",
    "stack up": "the brokers themselves",
    "stack down": "the brokers themselves",
    "stack status": "the brokers themselves",
    "stack restart": "the brokers themselves",
    "stack install": "fetches jars",
    "namespace list": "lists namespaces",
    "namespace drop": "the namespace is its argument",
    "cluster reassignment": "moves every topic's replicas, whatever the namespace",
}
# Commands without results to print as JSON.
NO_JSON = {
    "run": "a long-running service; it logs (DUALPLANE_LOG_FORMAT=json)",
    "kafka": "Kafka's own tools print their own output",
    "stack install": "prints progress only",
    "records export": "writes records to -o/--output in the --format chosen",
    "cluster reassignment": "prints Kafka's own reassignment JSON (or writes it to -o/--output)",
}
# Option names the grammar replaced: each is either gone or a hidden alias that warns.
RETIRED = {
    "--out": "-o/--output",
    "--timeout-s": "--timeout 90s",
    "--interval-s": "--interval 2s",
    "--delay-ms": "--delay 250ms",
    "--ttl-s": "--ttl 30m",
    "--latency-ms": "--latency 20ms",
    "--change-every-s": "--change-every 90s",
}
# A duration option takes "90s" or "250ms": no unit in its name.
UNIT_SUFFIXES = ("-s", "-ms")


def leaves(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, click.Command]]:
    if hasattr(command, "list_commands"):  # a group (typer vendors its own click, without Group)
        context = click.Context(command)
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            assert sub is not None
            yield from leaves(sub, (*path, name))
    else:
        yield " ".join(path), command


def every_command() -> list[tuple[str, click.Command]]:
    return [leaf for name, lazy in COMMANDS.items() for leaf in leaves(lazy.load(name), (name,))]


def options(command: click.Command, *, hidden: bool = False) -> set[str]:
    return {
        name
        for param in command.params
        if param.param_type_name == "option" and (hidden or not getattr(param, "hidden", False))
        for name in param.opts
    }


def broken_rules(path: str, command: click.Command) -> list[str]:
    """The rules ``command`` breaks, each as a sentence naming the command."""
    shown = options(command)
    broken = []
    if path not in NO_NAMESPACE and "--namespace" not in shown:
        broken.append(f"`{path}` touches topics or queues but has no --namespace")
    if path not in NO_JSON and "--json" not in shown:
        broken.append(f"`{path}` has results but no --json")
    for old, new in RETIRED.items():
        if old in shown:
            broken.append(f"`{path}` shows {old}: the grammar's name is {new} (keep {old} hidden)")
    for name in shown:
        if name.endswith(UNIT_SUFFIXES) and name not in RETIRED:
            broken.append(f"`{path}`'s {name} names its unit: take a duration (90s, 250ms) instead")
    if path == "sample-site" and "--seed" in shown:
        broken.append("`sample-site` shows --seed, which elsewhere is a start URL: its name is --random-seed")
    namespace = next((p for p in command.params if "--namespace" in getattr(p, "opts", ())), None)
    if namespace is not None and namespace.envvar != "DUALPLANE_NAMESPACE":
        broken.append(f"`{path}`'s --namespace does not read DUALPLANE_NAMESPACE")
    return broken


def test_the_walk_sees_every_command() -> None:
    paths = {path for path, _ in every_command()}
    assert {"crawl", "status", "dlq list", "records latest", "throttle show", "monitor create"} <= paths
    assert set(NO_NAMESPACE) <= paths and set(NO_JSON) <= paths, "an exemption names no command"


@pytest.mark.parametrize(("path", "command"), every_command(), ids=str)
def test_every_command_follows_the_grammar(path: str, command: click.Command) -> None:
    assert broken_rules(path, command) == []


def test_a_command_that_breaks_the_rules_is_caught() -> None:
    """The checker itself: a command without --namespace or --json, and with --out shown."""
    app = typer.Typer()

    @app.command()
    def bad(out: str = typer.Option("x", "--out")) -> None:
        """Reads a topic."""

    command = typer.main.get_command(app)
    assert broken_rules("bad", command) == [
        "`bad` touches topics or queues but has no --namespace",
        "`bad` has results but no --json",
        "`bad` shows --out: the grammar's name is -o/--output (keep --out hidden)",
    ]
