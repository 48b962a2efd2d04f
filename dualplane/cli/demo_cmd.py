"""``dualplane demo``: the main job on the embedded stack, from an empty machine to a checked crawl.

1. bring the local stack up (Kafka, RabbitMQ, S3);
2. round-trip a message through each plane and S3 (the wiring works);
3. crawl a generated sample site with the real frontier, fetcher and extractor, shown live;
4. check the crawl against the site's ground truth and print a summary.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.table import Table

from dualplane.cli.output import JsonOption, mark, print_json, progress, stderr, stdout, table
from dualplane.core.settings import Settings
from dualplane.demo.crawl import CrawlSummary, crawl_sample_site
from dualplane.demo.roundtrip import run_demo
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.stack import LocalStack

COUNTERS = (
    "seeded",
    "discovered",
    "duplicates",
    "queued",
    "in_flight",
    "retrying",
    "done",
    "failed",
    "backlog",
)


def demo(
    hosts: Annotated[int, typer.Option(help="Hosts of the sample site.")] = 3,
    pages: Annotated[int, typer.Option(help="Pages per host.")] = 40,
    as_json: JsonOption = False,
) -> None:
    """Start the embedded stack, prove every plane answers, then crawl a sample site end to end."""
    settings = Settings.from_env()
    services = LocalStack(settings).up(progress)
    progress("demo", "round trips through Kafka, RabbitMQ and S3")
    round_trips = run_demo(settings)
    wired = all(step.ok for step in round_trips)
    summary = _crawl(settings, hosts, pages) if wired else None
    ok = wired and summary is not None and summary.ok
    if as_json:
        crawl = {**vars(summary), "ok": summary.ok} if summary else None
        print_json({"ok": ok, "services": services, "round_trips": round_trips, "crawl": crawl})
    else:
        rows = [[r.plane, r.path, mark(r.ok), f"{r.latency_ms:.0f} ms", r.detail] for r in round_trips]
        stdout.print(table("round trips", ["plane", "path", "result", "latency", "detail"], rows))
        if summary is not None:
            stdout.print(_summary_table(summary))
        stdout.print("[green]Demo passed.[/green]" if ok else "[red]Demo failed; see the tables above.[/red]")
    if not ok:
        raise typer.Exit(1)


def _crawl(settings: Settings, hosts: int, pages: int) -> CrawlSummary:
    progress("demo", f"crawling a {hosts}-host sample site ({pages} pages per host) with the real services")
    with Live(console=stderr, refresh_per_second=4, transient=True) as live:
        return crawl_sample_site(
            settings,
            SiteSpec(seed=7, hosts=hosts, pages_per_host=pages, latency_ms=20),
            lambda snapshot, site: live.update(_live_view(snapshot, site)),
        )


def _live_view(snapshot: dict[str, Any], site: SampleSite) -> Group:
    counters = Table(title="job", title_justify="left")
    for name in COUNTERS:
        counters.add_column(name.replace("_", " "), justify="right")
    counters.add_row(*(str(snapshot.get(name, 0)) for name in COUNTERS))
    hosts = Table(title="the site's view", title_justify="left")
    for column in ("host", "requests", "req/s (10 s)", "in flight", "max in flight"):
        hosts.add_column(column, justify="right")
    for host in site.stats().hosts:
        hosts.add_row(host.url, str(host.total_requests), f"{host.rate_10s:.1f}", str(host.in_flight),
                      str(host.max_in_flight))  # fmt: skip
    return Group(counters, hosts)


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
    ]
    for product in summary.sample_products:
        rows.append(["product record", f"{product['name']}: {product['price']}, {product['availability']}"])
    if summary.missing:
        rows.append(["missing (first 20)", ", ".join(summary.missing)])
    return table("crawl of the sample site", ["", ""], rows)
