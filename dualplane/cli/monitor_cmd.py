"""``dualplane monitor create|list|show|pause|resume|visit|delete``: crawl jobs that come back.

Parse and print only: :class:`~control_plane.frontier.monitor_client.MonitorClient` reaches the
frontier shards, which hold the monitors and their schedules (``docs/monitors.md``).
"""

from __future__ import annotations

import itertools
import re
import time
import uuid
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dualplane.cli import values
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stderr, stdout, table

if TYPE_CHECKING:
    from dualplane.control_plane.frontier import MonitorClient

app = typer.Typer(help="Monitors: crawl jobs that come back, revisiting each page when it is due.")

MonitorArg = Annotated[str, typer.Argument(help="The monitor id, as `dualplane monitor list` shows it.")]
WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="Follow the visit until its pages are fetched and its records committed; the exit code "
        "says how it ended (as `crawl --wait`).",
    ),
]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", parser=values.duration, help="With --wait: give up after this long.")
]


def parse_duration_s(text: str, option: str) -> int:
    """``90``, ``90s``, ``15m``, ``6h`` or ``7d`` in seconds (at most ten years); a usage error naming
    ``option`` else."""
    return values.duration_s(text, option)


@app.command("create")
def create(
    seed: Annotated[
        list[str] | None,
        typer.Option("--seed", parser=values.non_empty, help="A start URL; repeat for more."),
    ] = None,
    seeds_file: Annotated[str | None, typer.Option(help="Start URLs, one per line (local or s3://).")] = None,
    sitemap: Annotated[
        list[str] | None, typer.Option("--sitemap", help="A sitemap whose pages are seeds.")
    ] = None,
    sitemaps_from_robots: Annotated[
        bool, typer.Option(help="Also read the sitemaps the --seed hosts' robots.txt name.")
    ] = False,
    monitor: Annotated[str | None, typer.Option("--monitor", help="Monitor id (default: a new one).")] = None,
    interval: Annotated[
        str, typer.Option(help="First revisit interval of each page (90s, 15m, 6h, 7d).")
    ] = "6h",
    min_interval: Annotated[
        str | None, typer.Option(help="Pages that change are revisited at most this often.")
    ] = None,
    max_interval: Annotated[
        str | None, typer.Option(help="Pages that never change: at least this often.")
    ] = None,
    priority: Annotated[str, typer.Option(help="Lane of its tasks: high, normal or bulk.")] = "normal",
    max_pages: Annotated[
        int | None, typer.Option(min=1, help="Budget: pages fetched per visit at most.")
    ] = None,
    max_depth: Annotated[int | None, typer.Option(min=0, help="Links followed from a seed at most.")] = None,
    allow_domain: Annotated[
        list[str] | None,
        typer.Option(parser=values.non_empty, help="Domains in scope (default: the seeds')."),
    ] = None,
    deny: Annotated[list[str] | None, typer.Option(help="Regex; matching URLs are skipped.")] = None,
    allow: Annotated[list[str] | None, typer.Option(help="Regex; only matching URLs are followed.")] = None,
    domain_budget: Annotated[
        int | None, typer.Option(min=1, help="Pages admitted per domain per visit at most.")
    ] = None,
    extractor: Annotated[
        str | None,
        typer.Option(parser=values.non_empty, help="Extractor plugin for its pages (entry point name)."),
    ] = None,
    profile: Annotated[
        str | None, typer.Option(help="The fetch profile for every page it visits, whatever its domain.")
    ] = None,
    ignore_robots: Annotated[bool, typer.Option(help="Do not obey robots.txt.")] = False,
    wait: WaitOption = False,
    timeout: TimeoutOption = 3600,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Create a monitor: its first visit is a crawl job now; each page it fetches is revisited when due.
    With --wait, follow that first visit to its end (exit codes as `crawl --wait`)."""
    from dualplane.brokers.amqp.messages import MONITOR_ID, MonitorSpec, visit_job_id
    from dualplane.cli.crawl_cmd import (
        _checked_extractor,
        _existing_profile,
        _lane,
        _no_seeds,
        _patterns,
        _read_seeds,
    )
    from dualplane.cli.sitemap_seeding import submit_sitemaps
    from dualplane.connectors.seeds import open_seed_list
    from dualplane.control_plane.frontier import JobClient, MonitorClient

    settings = settings_in(namespace)
    seeds = _read_seeds(seed or [], seeds_file, bool(sitemap))
    monitor_id = monitor or f"monitor-{uuid.uuid4().hex[:8]}"
    if not re.match(MONITOR_ID, monitor_id):
        raise typer.BadParameter(f"{monitor_id!r}: use letters, digits, '.', '_' and '-' (at most 100)",
                                 param_hint="--monitor")  # fmt: skip
    if priority not in ("high", "normal", "bulk"):
        raise typer.BadParameter(
            f"{priority!r} is not a lane; use high, normal or bulk", param_hint="--priority"
        )
    if sitemaps_from_robots and not seed:
        raise typer.BadParameter("it reads the robots.txt of the --seed URLs' hosts: give --seed",
                                 param_hint="--sitemaps-from-robots")  # fmt: skip
    interval_s, min_s, max_s = _intervals(interval, min_interval, max_interval)
    seed_list = open_seed_list(seeds_file, settings) if seeds_file else None
    job = JobClient(settings).spec(
        visit_job_id(monitor_id, 1), itertools.chain(seeds, seed_list or (), sitemap or ()),
        allowed_domains=tuple(allow_domain) if allow_domain else None,
        max_depth=max_depth, max_pages=max_pages, priority=_lane(priority), obey_robots=not ignore_robots,
        monitor=monitor_id, deny_patterns=_patterns(deny, "--deny"),
        allow_patterns=_patterns(allow, "--allow"), domain_budget=domain_budget,
        extractor=_checked_extractor(extractor), profile=_existing_profile(settings, profile),
    )  # fmt: skip
    spec = MonitorSpec(monitor_id=monitor_id, job=job, interval_s=interval_s, min_interval_s=min_s,
                       max_interval_s=max_s, seeds=len(seeds), sitemaps=tuple(sitemap or ()))  # fmt: skip
    count = MonitorClient(settings).create(spec, itertools.chain(seeds, seed_list or ()))
    if sitemap or sitemaps_from_robots:
        count += submit_sitemaps(
            JobClient(settings), job, sitemap or [], seeds if sitemaps_from_robots else []
        )
    if count == 0:
        _no_seeds(JobClient(settings), job.job_id, as_json, monitor=monitor_id)
    summary = {"monitor_id": monitor_id, "first_visit_job": job.job_id, "seeds": count,
               "interval_s": interval_s, "min_interval_s": min_s, "max_interval_s": max_s}  # fmt: skip
    if not as_json:
        stdout.print(
            f"monitor [bold]{monitor_id}[/bold]: first visit {job.job_id} with {count} seed(s); "
            f"each page revisited after {_duration(interval_s)} (changing pages down to {_duration(min_s)}, "
            f"unchanged up to {_duration(max_s)}); follow with `dualplane status --job {job.job_id}`",
            soft_wrap=True, highlight=False,
        )  # fmt: skip
    _followed(
        job.job_id, summary, wait=wait, timeout_s=timeout, seeds=count, as_json=as_json, namespace=namespace
    )


def _intervals(interval: str, minimum: str | None, maximum: str | None) -> tuple[int, int, int]:
    interval_s = parse_duration_s(interval, "--interval")
    min_s = parse_duration_s(minimum, "--min-interval") if minimum else min(interval_s, 900)
    max_s = parse_duration_s(maximum, "--max-interval") if maximum else max(interval_s, 7 * 86_400)
    if not min_s <= interval_s <= max_s:
        raise typer.BadParameter(
            f"the interval ({_duration(interval_s)}) must lie within --min-interval ({_duration(min_s)}) "
            f"and --max-interval ({_duration(max_s)})",
            param_hint="--interval",
        )
    return interval_s, min_s, max_s


@app.command("list")
def list_(as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Every monitor: URLs scheduled, due now, overdue, change rate and share of 304s."""
    monitors = _client(namespace).monitors()
    if as_json:
        print_json(list(monitors.values()))
        return
    stdout.print(monitors_table(list(monitors.values())))


def monitors_table(monitors: list[dict[str, Any]]) -> Any:
    """The table ``monitor list`` and ``status`` show (one row a monitor)."""
    rows = [
        [m["monitor_id"], "paused" if m["paused"] else f"visit {m['visit']}", str(m["scheduled"]),
         str(m["due_now"]), _overdue(m),
         _share(m["change_rate"]), _share(m["share_304"]), str(m["skipped"])]
        for m in monitors
    ]  # fmt: skip
    columns = ["monitor", "state", "scheduled", "due now", "overdue", "change rate", "304s", "lastmod skips"]
    return table("monitors", columns, rows)


@app.command("show")
def show(monitor: MonitorArg, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """One monitor: its rules and its counters."""
    found = _found(namespace, monitor)
    if as_json:
        print_json(found)
        return
    rows = [[key, str(value)] for key, value in found.items() if key != "spec"]
    rows += [[f"spec.{key}", str(value)] for key, value in found["spec"].items() if key != "job"]
    rows += [[f"spec.job.{key}", str(value)] for key, value in found["spec"]["job"].items()]
    stdout.print(table(f"monitor {monitor}", ["field", "value"], rows))


def _command(monitor: str, action: str, namespace: str | None, as_json: bool, done: str) -> None:
    client = _client(namespace)
    _found(namespace, monitor, client)
    client.command(monitor, action)  # type: ignore[arg-type]  # one of MonitorAction, by each caller
    if as_json:
        print_json({"monitor_id": monitor, "action": action, "sent_at": time.time()})
    else:
        stdout.print(f"monitor {monitor}: {done}")


@app.command("pause")
def pause(monitor: MonitorArg, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Stop revisiting (its schedule is kept; due pages wait, counted as overdue)."""
    _command(monitor, "pause", namespace, as_json, "paused; its pages wait, `monitor resume` goes on")


@app.command("resume")
def resume(monitor: MonitorArg, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Revisit again: pages that came due while paused are taken first."""
    _command(monitor, "resume", namespace, as_json, "resumed")


@app.command("delete")
def delete(monitor: MonitorArg, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Delete the monitor and its schedule (records and change events already written stay)."""
    _command(monitor, "delete", namespace, as_json, "deleted with its schedule")


@app.command("visit")
def visit(
    monitor: MonitorArg,
    wait: WaitOption = False,
    timeout: TimeoutOption = 3600,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Visit now: every scheduled page due at once, as the monitor's next visit job (its sitemaps are read
    again first: a page whose lastmod is not newer than its last visit is skipped). With --wait, follow
    the visit to its end (exit codes as `crawl --wait`)."""
    from dualplane.cli.sitemap_seeding import submit_sitemaps
    from dualplane.control_plane.frontier import JobClient

    settings = settings_in(namespace)
    client = _client(namespace)
    sitemaps = list(_found(namespace, monitor, client)["spec"]["sitemaps"])

    def more(job: Any) -> int:
        return submit_sitemaps(JobClient(settings), job, sitemaps, []) if sitemaps else 0

    job_id = client.visit(monitor, more)
    if not as_json:
        stdout.print(
            f"monitor {monitor}: visit {job_id} started; follow with `dualplane status --job {job_id}`"
        )
    summary = {"monitor_id": monitor, "job_id": job_id}
    _followed(job_id, summary, wait=wait, timeout_s=timeout, seeds=None, as_json=as_json, namespace=namespace)


def _followed(
    job_id: str,
    summary: dict[str, Any],
    *,
    wait: bool,
    timeout_s: float,
    seeds: int | None,
    as_json: bool,
    namespace: str | None,
) -> None:
    """With ``wait``, follow the visit job as ``crawl --wait`` does (its last line and exit code);
    ``summary`` is printed as JSON with how it ended, when ``as_json``."""
    from dualplane.cli.crawl_cmd import _conclude
    from dualplane.cli.following import follow, verdict_fields

    verdict = follow(settings_in(namespace), job_id, timeout_s, seeds=seeds)[1] if wait else None
    if as_json:
        print_json({**summary, **verdict_fields(verdict)})
    if verdict is not None:
        _conclude(job_id, verdict, timeout_s)


def _client(namespace: str | None) -> MonitorClient:
    from dualplane.control_plane.frontier import MonitorClient

    return MonitorClient(settings_in(namespace))


def _found(namespace: str | None, monitor: str, client: MonitorClient | None = None) -> dict[str, Any]:
    from dualplane.control_plane.frontier import UnknownMonitor

    try:
        return (client or _client(namespace)).monitor(monitor)
    except UnknownMonitor as error:
        stderr.print(f"error: {error}", soft_wrap=True, highlight=False)
        raise typer.Exit(1) from None


def _overdue(monitor: dict[str, Any]) -> str:
    overdue = monitor["overdue"]
    return f"{overdue} (oldest {_duration(monitor['oldest_overdue_s'])})" if overdue else "0"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _duration(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
