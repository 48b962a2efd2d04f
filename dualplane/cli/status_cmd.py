"""``dualplane status [--job ID] [--jobs N] [--watch] [--json]``: jobs with rate and ETA, the control
plane's queues, consumer lag and throttled domains (gathered by :mod:`dualplane.status`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from dualplane.cli import values
from dualplane.cli.deprecated import renamed_value
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stdout, table
from dualplane.core.exceptions import DualplaneError

if TYPE_CHECKING:  # imported when the command runs, so that `status --help` starts fast
    from dualplane.control_plane.frontier import ProgressReader
    from dualplane.core.settings import Settings

BROKER_PARTS = ("jobs", "queues", "lag")  # the parts read from Kafka and RabbitMQ
KAFKA_PROBE_S = 8.0  # a metadata answer takes milliseconds; 8 s leaves room for a loaded broker


def status(
    job: Annotated[
        str | None, typer.Option("--job", parser=values.non_empty, help="Show this job's progress counters.")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=0, help="Show this many jobs, running first.")] = 10,
    watch: Annotated[bool, typer.Option("--watch", help="Redraw every --interval until Ctrl-C.")] = False,
    interval: Annotated[
        float, typer.Option("--interval", parser=values.duration, help="Redraw period, e.g. 2s (0.5s to 1h).")
    ] = 2.0,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
    interval_s: Annotated[
        float | None, typer.Option("--interval-s", hidden=True, help="Old name of --interval, in seconds.")
    ] = None,
) -> None:
    """Jobs (done, failed, dead-lettered, queued, rate, ETA), queues, consumer lag, throttled domains."""
    interval = renamed_value(interval, interval_s, "--interval-s", "--interval 2s")
    if not 0.5 <= interval <= 3600:
        raise typer.BadParameter("redraw at most every 0.5s and at least every 1h", param_hint="--interval")
    from dualplane.control_plane.frontier import ProgressReader

    settings = settings_in(namespace)
    reader = _open_reader(settings)
    try:
        if watch:
            _watch(settings, reader, job, jobs, interval)
            return
        view = _view(settings, reader, job, jobs)
        if as_json:
            print_json(view)
        else:
            stdout.print(render(view))
        _fail_without_brokers(view["errors"])
    finally:
        if isinstance(reader, ProgressReader):
            reader.close()


def _fail_without_brokers(errors: dict[str, str]) -> None:
    """Exit 1 when a broker's part is missing: a status that never reached Kafka or RabbitMQ is none
    (it exited 0 after 58 s of retries). A missing throttle snapshot is only a note in its table."""
    missing = {part: why for part, why in errors.items() if part in BROKER_PARTS}
    if missing:
        text = " ".join("; ".join(f"{part}: {why}" for part, why in missing.items()).split())
        raise DualplaneError(f"status is incomplete, a broker did not answer ({text})")


def _open_reader(settings: Settings) -> ProgressReader | Exception:
    """The progress reader, or why Kafka could not give one (the rest of the view is still shown).

    Kafka is asked once, for its metadata, within ``KAFKA_PROBE_S``: opening the reader on a cluster
    that does not answer waited out the topic admin's 30 s, and each lag read 10 s more (42 s before
    `status` said Kafka was away)."""
    from dualplane.brokers.kafka.clients import answers
    from dualplane.control_plane.frontier import ProgressReader

    if not answers(settings.kafka, timeout_s=KAFKA_PROBE_S):
        servers = settings.kafka.bootstrap_servers
        return DualplaneError(f"Kafka at {servers} did not answer within {KAFKA_PROBE_S:.0f} s")
    try:
        return ProgressReader(settings)
    except Exception as error:
        return error


def _watch(
    settings: Settings, reader: ProgressReader | Exception, job: str | None, jobs: int, interval_s: float
) -> None:
    """Redraw in place every ``interval_s`` until Ctrl-C (which ends it with status 0). Into a file or
    a pipe, where nothing can be redrawn (a live view wrote nothing there until Ctrl-C), each view is
    printed after the last one instead."""
    from rich.live import Live

    try:
        if not stdout.is_terminal:
            while True:
                stdout.print(render(_view(settings, reader, job, jobs)))
                stdout.file.flush()
                time.sleep(interval_s)
        with Live(console=stdout, refresh_per_second=1) as live:
            while True:
                live.update(render(_view(settings, reader, job, jobs)))
                time.sleep(interval_s)
    except KeyboardInterrupt:
        return


def _view(
    settings: Settings, reader: ProgressReader | Exception, job: str | None, jobs: int
) -> dict[str, Any]:
    from dualplane.status import gather, job_detail

    view = gather(settings, reader, max_jobs=jobs)
    if job is not None:
        if isinstance(reader, Exception):
            raise DualplaneError(f"cannot read the progress of job {job!r}: {reader}")
        snapshot = reader.job(job)
        if snapshot is None:
            raise DualplaneError(
                f"no progress for job {job!r} yet: is the frontier running (`dualplane run frontier`) "
                "and was the job submitted with `dualplane crawl`?"
            )
        lag = next((row["lag"] for row in view["lag"] if row["consumer"] == "extractor"), None)
        view["job"] = job_detail(settings, snapshot, lag, time.time())
    return view


def render(view: dict[str, Any]) -> Group:
    """The view as rich tables (a part that could not be read says so in its title)."""
    errors = view["errors"]
    parts: list[Any] = [_jobs_table(view["jobs"], errors)]
    if view.get("monitors"):
        from dualplane.cli.monitor_cmd import monitors_table

        parts.append(monitors_table(view["monitors"]))
    parts.append(_queues_table(view, errors))
    parts.append(_lag_table(view["lag"], errors))
    if view.get("credits"):
        parts.append(_credits_line(view["credits"]))
    if view.get("quota"):
        parts.append(_quota_line(view["quota"]))
    replication = view.get("replication") or {"alarms": []}
    if replication["alarms"] or "replication" in errors:
        parts.append(_replication_lines(replication, errors))
    if view["throttled"] or "throttled" in errors:
        parts.append(_throttled_table(view["throttled"], errors))
    if view.get("extraction"):
        parts.append(extraction_line(view["extraction"]))
    if "job" in view:
        rows = [[key, str(value)] for key, value in view["job"].items()]
        parts.append(table(f"job {view['job']['job_id']}", ["counter", "value"], rows))
    return Group(*parts)


def _jobs_table(jobs: list[dict[str, Any]], errors: dict[str, str]) -> Table:
    rows = [
        [r["job_id"], r["state"], str(r["done"]), str(r["failed"]), str(r["dead_lettered"]), str(r["queued"]),
         f"{r['rate_per_s']:.1f}/s", _eta(r["eta_s"])]
        for r in jobs
    ]  # fmt: skip
    columns = ["job", "state", "done", "failed", "dead-lettered", "queued", "rate", "ETA"]
    return table(_title("jobs", "jobs", errors), columns, rows)


def _queues_table(view: dict[str, Any], errors: dict[str, str]) -> Table:
    rows = [[q["name"], str(q["ready"]), str(q["unacked"]), str(q["consumers"]), f"{q['deliver_rate']:.1f}/s"]
            for q in view["queues"]]  # fmt: skip
    title = _title(f"queues (and {view['permit_queues']} per-domain permit queues)", "queues", errors)
    return table(title, ["queue", "ready", "in flight", "consumers", "delivered"], rows)


def _lag_table(lag: list[dict[str, Any]], errors: dict[str, str]) -> Table:
    rows = [[str(row["consumer"]), str(row["topic"]), str(row["lag"])] for row in lag]
    title = _title("consumer lag (records not committed yet)", "lag", errors)
    return table(title, ["consumer", "topic", "lag"], rows)


def extraction_line(found: dict[str, Any]) -> Text:
    """The extractors' own figures (read from their metrics endpoints), failed main texts in red."""
    line = Text(f"extraction: {found['pages']} pages by {found['extractors']} extractor(s), ")
    line.append(f"{found['cpu_ms_per_page']} CPU ms/page; ")
    failed = found["text_failures"]
    if failed:
        detail = ", ".join(f"{key} {count}" for key, count in found["text_failures_by_error"].items())
        line.append(f"main text failed on {failed} page(s) ({detail})", style="red")
    else:
        line.append("no main text failed")
    return line


def _quota_line(quota: dict[str, Any]) -> Text:
    return Text.assemble(
        ("scraping API quota: ", "bold red"),
        f"every domain paused for {quota['paused_for_s']:.0f} s more ({quota['reason']}); "
        "once the budget is raised: dualplane throttle clear '*'",
    )


def _credits_line(credits: dict[str, Any]) -> Text:
    used = f"{credits['used']:g} used"
    if credits.get("budget"):
        used += f" of {credits['budget']:g} ({credits['left']:g} left)"
        if credits.get("paused"):
            used += ": spent, every domain paused until the day ends"
    else:
        used += " (no daily budget: DUALPLANE_THROTTLE_DAILY_CREDITS)"
    return Text.assemble(("scraping API credits ", "bold"), f"today ({credits['day']} UTC): {used}")


def _throttled_table(throttled: list[dict[str, Any]], errors: dict[str, str]) -> Table:
    rows = [[r["domain"], str(r["concurrency"]), f"{r['delay_ms']} ms", str(r["paused"]),
             f"{r['blocked_ratio']:.1%}"] for r in throttled]  # fmt: skip
    title = _title("throttled domains", "throttled", errors)
    return table(title, ["domain", "P_d", "delay", "paused", "block ratio"], rows)


def _replication_lines(replication: dict[str, Any], errors: dict[str, str]) -> Text:
    """Shown only when something is short of copies (or could not be read): a healthy cluster, or
    one node, adds nothing to the view."""
    text = Text("replication", style="bold red")
    if "replication" in errors:
        text.append(f" (unavailable: {errors['replication']})", style="red")
    for alarm in replication["alarms"]:
        text.append(f"\n  {alarm}")
    return text


def _title(title: str, part: str, errors: dict[str, str]) -> str:
    return f"{title} [red](unavailable: {errors[part]})[/red]" if part in errors else title


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
