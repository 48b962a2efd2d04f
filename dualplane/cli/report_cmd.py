"""``dualplane report JOB -o DIR``: a job's self-contained HTML report (:mod:`dualplane.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dualplane.cli.deprecated import warn_renamed
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, progress, stdout
from dualplane.core.exceptions import DualplaneError
from dualplane.report import read_job, write_report


def report(
    job: Annotated[str, typer.Argument(help="The job id, as `dualplane crawl` or `status` shows it.")],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory to write index.html into.")
    ] = Path("report"),
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
    out: Annotated[Path | None, typer.Option("--out", hidden=True, help="Old name of --output.")] = None,
) -> None:
    """Throughput, outcomes, throttle timelines, slowest and failing domains, dead letters: one HTML file."""
    if out is not None:
        warn_renamed("--out", "-o/--output")
        output = out
    settings = settings_in(namespace)
    progress("report", f"reading {settings.topics.fetch_events} and the job's counters for {job}")
    data = read_job(settings, job)
    if not data.events and data.progress is None:
        raise DualplaneError(
            f"nothing known about job {job!r}: no fetch event in {settings.topics.fetch_events} and no "
            "progress; check the id with `dualplane status` (a demo job: add --namespace demo)"
        )
    path = write_report(settings, data, output)
    summary = {"report": str(path), "fetch_events": len(data.events), "dead_letters": len(data.dead_letters),
               "throttle_commands": len(data.commands)}  # fmt: skip
    if as_json:
        print_json(summary)
    else:
        stdout.print(f"wrote {path} ({len(data.events)} fetch events); open it with: xdg-open {path}")
