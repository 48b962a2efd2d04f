"""``dualplane records tail | export``: page records for downstream use, as JSON lines or Avro."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, BinaryIO, Literal

import typer
from fastavro import writer as avro_writer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from dualplane import schemas
from dualplane.cli import values
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, stderr, stdout, table
from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor import PageRecord, iter_records, latest_records

app = typer.Typer(help="Read extracted page records (the records topic, committed records only).")

Format = Literal["jsonl", "avro"]
FormatOption = Annotated[str, typer.Option("--format", help="jsonl (one JSON object per line) or avro.")]
JobOption = Annotated[
    str | None, typer.Option("--job", parser=values.non_empty, help="Only this job's records.")
]
TopicOption = Annotated[
    str | None,
    typer.Option(
        "--topic", parser=values.non_empty, help="The records topic to read (default: the namespace's)."
    ),
]


@app.command("tail")
def tail(
    from_beginning: Annotated[bool, typer.Option(help="Start at the oldest record, not the newest.")] = False,
    job: JobOption = None,
    output_format: FormatOption = "jsonl",
    namespace: NamespaceOption = None,
    topic: TopicOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines (the same as --format jsonl).")] = False,
) -> None:
    """Print records as extractors commit them, until Ctrl-C."""
    if as_json:
        output_format = "jsonl"
    settings = _reading(settings_in(namespace), topic)
    records = iter_records(settings, from_beginning=from_beginning, follow=True, job_id=job)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a tail ends
        _write(records, _format(output_format), sys.stdout.buffer)


@app.command("export")
def export(
    job: JobOption = None,
    output_format: FormatOption = "jsonl",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (default stdout).")
    ] = None,
    namespace: NamespaceOption = None,
    topic: TopicOption = None,
) -> None:
    """Write every committed record (up to now) and stop; Avro writes a container file."""
    settings = _reading(settings_in(namespace), topic)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=stderr, transient=True) as progress:
        bar = progress.add_task("exporting records", total=None)

        def counted() -> Iterator[PageRecord]:
            for count, record in enumerate(iter_records(settings, follow=False, job_id=job), 1):
                progress.update(bar, description=f"exporting records: {count}")
                yield record

        if output is None:
            written = _write(counted(), _format(output_format), sys.stdout.buffer)
        else:
            with output.open("wb") as file:
                written = _write(counted(), _format(output_format), file)
    stderr.print(f"exported {written} record(s)" + (f" to {output}" if output else ""))


def _reading(settings: Settings, topic: str | None) -> Settings:
    """``settings`` reading the records from ``topic`` when one is named (e.g. a replay's target)."""
    if topic is None:
        return settings
    return settings.model_copy(update={"topics": settings.topics.model_copy(update={"records": topic})})


def _format(value: str) -> Format:
    if value not in ("jsonl", "avro"):
        raise typer.BadParameter(f"{value!r}: use jsonl or avro", param_hint="--format")
    return "avro" if value == "avro" else "jsonl"


def _write(records: Iterator[PageRecord], output_format: Format, out: BinaryIO) -> int:
    count = 0
    if output_format == "avro":
        schema = schemas.default_registry().get("page_record").parsed

        def rows() -> Iterator[dict[str, object]]:
            nonlocal count
            for record in records:
                count += 1
                yield record.model_dump()

        avro_writer(out, schema, rows(), codec="deflate")
        return count
    for record in records:
        out.write(record.model_dump_json().encode() + b"\n")
        out.flush()
        count += 1
    return count


@app.command("latest")
def latest(
    url: Annotated[
        str | None,
        typer.Option("--url", parser=values.non_empty, help="Only this URL (as the frontier wrote it)."),
    ] = None,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """The current record of every URL (or of --url): records.latest, one record per URL."""
    settings = settings_in(namespace)
    with stderr.status(f"reading {settings.topics.records_latest}"):
        records = latest_records(settings, url=url)
    if url is not None and url not in records:
        raise DualplaneError(
            f"no record of {url} in {settings.topics.records_latest}; `records latest` lists the URLs"
        )
    if as_json:
        for key, record in records.items():
            sys.stdout.write(json.dumps({"url": key, "record": record.model_dump(mode="json")}) + "\n")
        return
    rows = [_latest_row(key, record) for key, record in sorted(records.items())]
    columns = ["url", "price", "availability", "title", "fetched at (UTC)"]
    stdout.print(table(f"{len(rows)} URL(s) in {settings.topics.records_latest}", columns, rows))


def _latest_row(url: str, record: PageRecord) -> list[str]:
    product = record.product
    price = (
        f"{product.price.normalize():f} {product.currency or ''}".strip()
        if product and product.price
        else "-"
    )
    availability = (product.availability if product else None) or "-"
    fetched = record.fetched_at.strftime("%Y-%m-%d %H:%M:%S")
    return [url, price, availability, (record.title or "-")[:60], fetched]
