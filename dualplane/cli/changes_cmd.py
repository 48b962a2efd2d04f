"""``dualplane changes tail``: field-level change events of watched pages (the changes topic)."""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated

import typer

from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, stdout
from dualplane.data_plane.extractor import ChangeEvent, iter_changes

app = typer.Typer(help="Change events: what changed on a page since its previous record.")


@app.command("tail")
def tail(
    from_beginning: Annotated[bool, typer.Option(help="Start at the oldest event, not the newest.")] = False,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Print change events as extractors commit them, until Ctrl-C (--json: one object a line)."""
    settings = settings_in(namespace)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a tail ends
        for event in iter_changes(settings, from_beginning=from_beginning, follow=True):
            if as_json:
                sys.stdout.write(event.model_dump_json() + "\n")
                sys.stdout.flush()
            else:
                stdout.print(describe(event), soft_wrap=True, highlight=False)


def describe(event: ChangeEvent) -> str:
    """One line: when, which URL, and each changed field as ``from -> to`` (or: new, gone)."""
    if event.kind == "new":
        return f"{event.fetched_at:%Y-%m-%d %H:%M:%S}  {event.url}  new: joined the monitor's schedule"
    if event.kind == "gone":
        return f"{event.fetched_at:%Y-%m-%d %H:%M:%S}  {event.url}  gone: 404/410, off the schedule"
    parts = []
    for name in event.changed:
        before, after = getattr(event, f"{name}_from"), getattr(event, f"{name}_to")
        parts.append(f"{name} {_shown(before)} -> {_shown(after)}")
    return f"{event.fetched_at:%Y-%m-%d %H:%M:%S}  {event.url}  " + ", ".join(parts)


def _shown(value: object) -> str:
    if value is None:
        return "-"
    if hasattr(value, "normalize"):  # a Decimal price: 17.4900 -> 17.49
        return f"{value.normalize():f}"
    return repr(value) if isinstance(value, str) and " " in value else str(value)
