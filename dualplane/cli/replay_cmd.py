"""``dualplane replay``: re-extract a range of ``pages.raw`` into a topic, without refetching."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from dualplane import schemas
from dualplane.cli import values
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stderr, stdout, table
from dualplane.core import metrics
from dualplane.data_plane.extractor import plan_replay, replay_pages


def replay_command(
    schema_version: Annotated[int, typer.Option(help="page_record version to write.")],
    from_time: Annotated[str | None, typer.Option(help="Start: ISO 8601 time or epoch milliseconds.")] = None,
    to_time: Annotated[str | None, typer.Option(help="End (exclusive): ISO 8601 or epoch ms.")] = None,
    from_offset: Annotated[
        list[str] | None,
        typer.Option(help="PARTITION:OFFSET to start at; repeat. Only the partitions named are replayed."),
    ] = None,
    to_offset: Annotated[
        list[str] | None, typer.Option(help="PARTITION:OFFSET to stop before; repeat.")
    ] = None,
    to_topic: Annotated[
        str | None, typer.Option(parser=values.non_empty, help="Target topic (default: the records topic).")
    ] = None,
    processes: Annotated[int, typer.Option(min=1, help="Worker processes (partitions in parallel).")] = 2,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Re-run extraction over pages.raw (by time or offsets; the end is fixed when it starts)."""
    settings = settings_in(namespace)
    if schema_version not in schemas.default_registry().versions("page_record"):
        raise typer.BadParameter(f"no page_record version {schema_version}", param_hint="--schema-version")
    ranges = plan_replay(
        settings,
        from_time_ms=_time_ms(from_time, "--from-time"),
        to_time_ms=_time_ms(to_time, "--to-time"),
        from_offsets=_offsets(from_offset, "--from-offset"),
        to_offsets=_offsets(to_offset, "--to-offset"),
    )
    target = to_topic or settings.topics.records
    metrics.serve(settings.metrics)  # replay progress, when DUALPLANE_METRICS_PORT is set
    total = sum(r.size for r in ranges)
    columns = (
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TransferSpeedColumn(), TimeRemainingColumn(),
    )  # fmt: skip
    with Progress(*columns, console=stderr, transient=True) as progress:
        bar = progress.add_task(f"replaying into {target}", total=total)
        result = replay_pages(
            settings,
            ranges,
            schema_version=schema_version,
            to_topic=target,
            processes=processes,
            on_progress=lambda n: progress.advance(bar, n),
        )
    if as_json:
        print_json({"ranges": ranges, "result": result})
        return
    rows = [[f"partition {r.partition}", f"{r.start} .. {r.end - 1}", str(r.size)] for r in ranges]
    stdout.print(table("replayed ranges", ["partition", "offsets", "pages"], rows))
    stdout.print(
        f"{result.records} record(s) v{result.schema_version} written to {result.to_topic} from "
        f"{result.pages} page(s) in {result.duration_s:.1f} s; {result.failed} failed extraction"
    )


def _time_ms(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError as error:
        raise typer.BadParameter(
            f"{value!r} is neither ISO 8601 nor epoch milliseconds", param_hint=option
        ) from error


def _offsets(values: list[str] | None, option: str) -> dict[int, int] | None:
    if not values:
        return None
    offsets = {}
    for value in values:
        partition, _, offset = value.partition(":")
        if not (partition.isdigit() and offset.isdigit()):
            raise typer.BadParameter(f"{value!r}: expected PARTITION:OFFSET, e.g. 0:1200", param_hint=option)
        offsets[int(partition)] = int(offset)
    return offsets
