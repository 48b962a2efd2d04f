"""``dualplane job cancel|pause|resume JOB``: stop a crawl job, or hold it and let it go on."""

from __future__ import annotations

from typing import Annotated

import typer

from dualplane.cli import values
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stdout

app = typer.Typer(help="Crawl jobs: pause, resume, or cancel one (its queued pages dropped unfetched).")

JobArgument = Annotated[str, typer.Argument(metavar="JOB", help="The job's id (as `crawl` printed it).")]


WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="Return only once no fetcher will start a fetch of the job (each running one confirmed).",
    ),
]
TimeoutOption = Annotated[
    float,
    typer.Option("--timeout", parser=values.duration, help="With --wait: give up (exit 1) after this long."),
]


@app.command("cancel")
def cancel(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job's id (as `crawl` printed it).")],
    force: Annotated[
        bool, typer.Option("--force", help="Send the cancel even if no shard has reported the job yet.")
    ] = False,
    wait: WaitOption = False,
    timeout_s: TimeoutOption = 60,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Cancel a job: its frontiers admit none of its URLs from now on and drop its backlog, and
    fetchers drop its queued tasks unfetched. Pages already fetched keep their records. An id no
    frontier shard has reported is refused (exit 1), unless --force. With --wait, return once every
    running fetcher confirmed it: from then on no fetch of the job starts (fetches already running
    finish first)."""
    from dualplane.brokers.amqp.messages import check_job_id
    from dualplane.control_plane.frontier import JobClient

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


@app.command("pause")
def pause(
    job_id: JobArgument,
    wait: WaitOption = False,
    timeout_s: TimeoutOption = 60,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Pause a job: its frontiers issue none of its pages and keep its backlog, and fetchers send
    its queued pages back unfetched (not counted as attempts) until `job resume`. Nothing is lost;
    `status` shows the job as paused. With --wait, return once every running fetcher confirmed it:
    from then on no fetch of the job starts (fetches already running finish first)."""
    from dualplane.control_plane.frontier import JobClient

    _check(job_id)
    confirmed = JobClient(settings_in(namespace)).pause(job_id, wait_s=timeout_s if wait else None)
    if as_json:
        print_json({"job_id": job_id, "paused": True, "fetchers_confirmed": confirmed})
        return
    if confirmed is not None:
        stdout.print(f"job {job_id}: paused; {confirmed} running fetcher(s) confirmed: no fetch of it starts")
        return
    stdout.print(
        f"job {job_id}: pause sent to every frontier shard; `dualplane job resume {job_id}` undoes it"
    )


@app.command("resume")
def resume(job_id: JobArgument, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Resume a paused job: its frontiers issue its backlog again and fetchers run its pages. A job
    that is not paused is left as it is."""
    from dualplane.control_plane.frontier import JobClient

    _check(job_id)
    JobClient(settings_in(namespace)).resume(job_id)
    if as_json:
        print_json({"job_id": job_id, "paused": False})
        return
    stdout.print(f"job {job_id}: resumed on every frontier shard")


def _check(job_id: str) -> None:
    from dualplane.brokers.amqp.messages import check_job_id

    try:
        check_job_id(job_id)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="JOB") from None
