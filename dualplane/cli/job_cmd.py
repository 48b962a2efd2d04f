"""``dualplane job cancel JOB``: stop a crawl job."""

from __future__ import annotations

from typing import Annotated

import typer

from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stdout

app = typer.Typer(help="Crawl jobs: cancel one (its queued pages are dropped unfetched).")


@app.command("cancel")
def cancel(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job's id (as `crawl` printed it).")],
    force: Annotated[
        bool, typer.Option("--force", help="Send the cancel even if no shard has reported the job yet.")
    ] = False,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Cancel a job: its frontiers admit none of its URLs from now on and drop its backlog, and
    fetchers drop its queued tasks unfetched. Pages already fetched keep their records. An id no
    frontier shard has reported is refused (exit 1), unless --force."""
    from dualplane.brokers.amqp.messages import check_job_id
    from dualplane.control_plane.frontier.client import JobClient

    try:
        check_job_id(job_id)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="JOB") from None
    JobClient(settings_in(namespace)).cancel(job_id, force=force)
    if as_json:
        print_json({"job_id": job_id, "cancelled": True})
        return
    stdout.print(
        f"job {job_id}: cancel sent to every frontier shard; `dualplane status --job {job_id}` shows it"
    )
