"""``dualplane job cancel JOB``: stop a crawl job."""

from __future__ import annotations

from typing import Annotated

import typer

from dualplane.cli import values
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stdout

app = typer.Typer(help="Crawl jobs: cancel one (its queued pages are dropped unfetched).")


@app.command("cancel")
def cancel(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job's id (as `crawl` printed it).")],
    force: Annotated[
        bool, typer.Option("--force", help="Send the cancel even if no shard has reported the job yet.")
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Return only once no fetcher will start a fetch of the job (each running one confirmed).",
        ),
    ] = False,
    timeout_s: Annotated[
        float,
        typer.Option(
            "--timeout", parser=values.duration, help="With --wait: give up (exit 1) after this long."
        ),
    ] = 60,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Cancel a job: its frontiers admit none of its URLs from now on and drop its backlog, and
    fetchers drop its queued tasks unfetched. Pages already fetched keep their records. An id no
    frontier shard has reported is refused (exit 1), unless --force. With --wait, return once every
    running fetcher confirmed it: from then on no fetch of the job starts (fetches already running
    finish first)."""
    from dualplane.brokers.amqp.messages import check_job_id
    from dualplane.control_plane.frontier.client import JobClient

    try:
        check_job_id(job_id)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="JOB") from None
    confirmed = JobClient(settings_in(namespace)).cancel(
        job_id, force=force, wait_s=timeout_s if wait else None
    )
    if as_json:
        print_json({"job_id": job_id, "cancelled": True, "fetchers_confirmed": confirmed})
        return
    if confirmed is not None:
        stdout.print(
            f"job {job_id}: cancelled; {confirmed} running fetcher(s) confirmed: no fetch of it starts"
        )
        return
    stdout.print(
        f"job {job_id}: cancel sent to every frontier shard; `dualplane status --job {job_id}` shows it"
    )
