"""``dualplane demo``: the main job on the embedded stack, from an empty machine to a checked crawl.

1. bring the local stack up (Kafka, RabbitMQ, S3);
2. round-trip a message through each plane and S3 (the wiring works);
3. crawl a generated sample site with the real frontier, fetcher and extractor, shown live;
4. check the crawl against the site's ground truth and print a summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.table import Table

from dualplane.cli.output import (
    JsonOption,
    configure_logging,
    mark,
    print_json,
    progress,
    stderr,
    stdout,
    table,
)
from dualplane.core.settings import Settings
from dualplane.demo.crawl import DEMO_NAMESPACE, CrawlSummary, crawl_sample_site
from dualplane.demo.live import LiveView
from dualplane.demo.roundtrip import run_demo
from dualplane.sample_site import SiteSpec
from dualplane.stack import LocalStack


def demo(
    hosts: Annotated[int, typer.Option(min=1, help="Hosts of the sample site.")] = 3,
    pages: Annotated[int, typer.Option(min=1, help="Pages per host.")] = 60,
    live: Annotated[
        bool, typer.Option("--live/--no-live", help="Live view; --no-live for scripts and CI.")
    ] = True,
    as_json: JsonOption = False,
) -> None:
    """Start the embedded stack, prove every plane answers, crawl a sample site whose first host fights
    back (the throttle halves it and recovers), replay the crawl into v2 records, write its report."""
    settings = Settings.from_env()
    # Quiet by default: only warnings, ours and the libraries' (librdkafka, Faust), drawn above the live view.
    configure_logging("warning", settings.log.format)
    services = LocalStack(settings).up(progress)
    progress("demo", "round trips through Kafka, RabbitMQ and S3")
    round_trips = run_demo(settings)
    wired = all(step.ok for step in round_trips)
    summary = _crawl(settings, hosts, pages, live and not as_json) if wired else None
    ok = wired and summary is not None and summary.ok
    if as_json:
        crawl = {**vars(summary), "ok": summary.ok, "commands": _commands(summary)} if summary else None
        print_json({"ok": ok, "services": services, "round_trips": round_trips, "crawl": crawl})
    else:
        rows = [[r.plane, r.path, mark(r.ok), f"{r.latency_ms:.0f} ms", r.detail] for r in round_trips]
        stdout.print(table("round trips", ["plane", "path", "result", "latency", "detail"], rows))
        if summary is not None:
            stdout.print(_summary_table(summary))
            stdout.print("[bold]Look further:[/bold]\n" + "\n".join(f"  {c}" for c in _commands(summary)))
        stdout.print("[green]Demo passed.[/green]" if ok else "[red]Demo failed; see the tables above.[/red]")
    if not ok:
        raise typer.Exit(1)


def _crawl(settings: Settings, hosts: int, pages: int, live: bool) -> CrawlSummary:
    progress("demo", f"crawling a {hosts}-host sample site ({pages} pages per host, the first one blocking "
             "beyond 4 requests/s) with the real frontier, fetcher, extractor and throttle")  # fmt: skip
    spec = SiteSpec(seed=7, hosts=hosts, pages_per_host=pages, latency_ms=20)
    if not live:
        return crawl_sample_site(settings, spec, _log_line())
    with Live(console=stderr, refresh_per_second=4, transient=True) as view:
        return crawl_sample_site(settings, spec, lambda snapshot, state: view.update(state.render(snapshot)))


def _log_line() -> Callable[[dict[str, Any], LiveView], None]:
    """--no-live: one progress line every 5 s."""
    last = [0.0]

    def line(snapshot: dict[str, Any], state: LiveView) -> None:
        state.render(snapshot)  # keeps the rates current
        if time.monotonic() - last[0] >= 5.0:
            last[0] = time.monotonic()
            limits = ", ".join(f"{h}: P_d {p}" for h, p in state.limits().items())
            progress("demo", f"{snapshot.get('done', 0)} done, {snapshot.get('queued', 0)} queued, "
                     f"{state.pages_per_s:.1f} fetches/s; {limits}")  # fmt: skip

    return line


def _summary_table(summary: CrawlSummary) -> Table:
    polite = max(summary.max_concurrency_per_host.values(), default=0)
    rows = [
        ["job", summary.job_id],
        ["reachable pages (ground truth)", str(summary.reachable)],
        ["pages in Kafka pages.raw", f"{summary.fetched} {mark(summary.fetched == summary.reachable)}"],
        ["tasks done / failed (404s)", f"{summary.done} / {summary.failed}"],
        ["records committed (Avro)", f"{summary.records} {mark(summary.records == summary.fetched)}"],
        ["duration", f"{summary.duration_s:.1f} s ({summary.pages_per_s:.1f} pages/s)"],
        ["max concurrent requests per host", f"{polite} (P_d = {summary.domain_concurrency})"],
        ["raw pages topic", summary.topics["pages_raw"]],
        ["fetch events topic", summary.topics["fetch_events"]],
        ["records topic", summary.topics["records"]],
        ["throttle (anti-bot host)", f"{summary.throttle} {mark(summary.throttled_and_recovered)}"],
        ["replay (no refetch)", _replay_line(summary)],
        ["report", summary.report],
    ]
    for product in summary.sample_products:
        rows.append(["product record", f"{product['name']}: {product['price']}, {product['availability']}"])
    if summary.missing:
        rows.append(["missing (first 20)", ", ".join(summary.missing)])
    return table("crawl of the sample site", ["", ""], rows)


def _replay_line(summary: CrawlSummary) -> str:
    replayed = summary.replay
    return (
        f"{replayed['pages']} raw pages -> {replayed['records']} records v{replayed['schema_version']} in "
        f"{replayed['to_topic']} ({replayed['duration_s']} s) {mark(replayed['records'] == summary.records)}"
    )


def _commands(summary: CrawlSummary) -> list[str]:
    """The exact commands to look further: the demo's topics are in the namespace ``demo``."""
    job, since, v2 = summary.job_id, summary.replay["from_time_ms"], summary.replay["to_topic"]
    return [
        f"dualplane status --namespace {DEMO_NAMESPACE} --job {job}",
        f"dualplane records tail --namespace {DEMO_NAMESPACE} --from-beginning --job {job}",
        f"dualplane records export --namespace {DEMO_NAMESPACE} --topic {v2} -o records-v2.jsonl",
        f"dualplane replay --namespace {DEMO_NAMESPACE} --from-time {since} --schema-version 3 "
        f"--to-topic {summary.topics['records']}.v3",
        f"dualplane report {job} --namespace {DEMO_NAMESPACE} -o report-{job}",
        f"xdg-open {summary.report}",
    ]
