"""A command group that imports a command's module only when that command is used.

``dualplane --help`` used to import every command's machinery (Kafka and AMQP clients, the
extraction library, matplotlib for reports, boto3 for S3 seed lists): 2-3 s of CPU before printing
a list. Here the root lists each command from a name and a help line written next to it, and a
command's module is imported when the command runs or its own ``--help`` is asked.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import typer
import typer.main
from typer import _click as click  # typer's own copy of click, whose classes its groups extend
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives: ``module.attribute``, a command function or a ``typer.Typer`` of
    sub-commands. ``help`` is the line the root's ``--help`` shows (a test holds it equal to the
    command's own first paragraph)."""

    module: str
    attribute: str
    help: str
    context_settings: Mapping[str, Any] = field(default_factory=dict)

    def load(self, name: str) -> click.Command:
        target = getattr(importlib.import_module(self.module), self.attribute)
        if isinstance(target, typer.Typer):
            command: click.Command = typer.main.get_group(target)
        else:
            single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
            single.command(name, context_settings=dict(self.context_settings))(target)
            command = typer.main.get_command(single)
        command.name = name
        return command


class LazyGroup(TyperGroup):
    """A root group over :class:`LazyCommand` entries; ``before_run`` is called once, just before
    a command's callback runs (never for ``--help``)."""

    def __init__(
        self, *, lazy: Mapping[str, LazyCommand], before_run: Callable[[], None] | None = None, **attrs: Any
    ) -> None:
        super().__init__(**attrs)
        self.lazy = dict(lazy)
        self.before_run = before_run
        self._listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.lazy)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.lazy.get(cmd_name)
        if entry is None:
            return None
        if self._listing:  # the root's help: name and help line, nothing imported
            return TyperCommand(cmd_name, help=entry.help)
        if cmd_name not in self.commands:
            command = entry.load(cmd_name)
            if self.before_run is not None:
                _call_first(command, self.before_run)
            self.commands[cmd_name] = command
        return self.commands[cmd_name]

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _call_first(command: click.Command, hook: Callable[[], None]) -> None:
    """Make ``command`` (every leaf of it, for a group) call ``hook`` before its own callback."""
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _call_first(sub, hook)
        return
    callback = command.callback
    if callback is None:
        return

    def run(*args: Any, **kwargs: Any) -> Any:
        hook()
        return callback(*args, **kwargs)

    command.callback = run
