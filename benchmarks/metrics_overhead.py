"""What the metrics hooks and the log context add to a page's CPU, and what a scrape costs.

A page that is fetched once and extracted passes, across the services, through a fixed set of
hooks: the fetcher counts the task's delivery, binds the page to its log context, counts the fetch
(outcome, latency, bytes), the two messages Kafka confirmed and the settled task, and writes a debug
line (off at info); the frontier counts and wraps the two task reports and the discovery batch the
page's links make, and its URL verdicts and the task it issued; the extractor wraps the page in
its log context and times its extraction. This script runs exactly that sequence, with the stages'
own counters and functions, ``--pages`` times per round, and prints the median microseconds per
page next to the pipeline's CPU per page (``--pipeline-ms``: CPU ms/page of all services from
``crawl_vs_scrapy.py``), then the cost of one scrape of an endpoint holding a crawl's series.

    .venv/bin/python benchmarks/metrics_overhead.py --pages 100000 --rounds 5 --pipeline-ms 9.5
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from typing import Any

from prometheus_client import REGISTRY, generate_latest

from dualplane.control_plane.fetcher import metrics as fetcher_metrics
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.control_plane.frontier import metrics as frontier_metrics
from dualplane.core import metrics
from dualplane.core.logs import bind_page, page_context, page_of
from dualplane.data_plane.extractor import metrics as extractor_metrics

log = logging.getLogger("dualplane.control_plane.fetcher.worker")


class Report:
    """A task report as the frontier receives it (the fields the hooks read)."""

    job_id = "job-1"
    trace_id = "0123456789abcdef0123456789abcdef"
    domain = "shop.example"
    url = "http://shop.example/products/42"


RAW_PAGE: dict[str, Any] = {
    "job_id": "job-1", "trace_id": Report.trace_id, "task_id": "t", "url": Report.url,
    "final_url": Report.url, "domain": Report.domain, "depth": 2, "attempt": 1, "status": 200,
    "fetched_at": 0, "content_type": "text/html", "charset": "utf-8", "headers": {},
    "redirect_chain": [], "body": b"", "body_truncated": False, "claim_check": None,
    "body_sha256": "", "body_bytes": 0,
}  # fmt: skip


def one_page(consumed: Any, produced: tuple[Any, Any]) -> None:
    """Every hook one fetched and extracted page passes through, in all three services."""
    report = Report()
    # fetcher: delivery, coroutine, fetch, hand-off, settling
    consumed.inc()
    with page_context(**page_of(report)):
        pass
    bind_page(trace_id=report.trace_id, job_id=report.job_id, domain=report.domain, url=report.url)
    fetcher_metrics.fetched(Outcome.OK, 42, 5_000)
    log.debug("fetched %s: %s, HTTP %s, %d ms", report.url, Outcome.OK, 200, 42)
    produced[0].inc()
    produced[1].inc()
    with page_context(trace_id=report.trace_id, job_id=report.job_id, domain=report.domain, url=report.url):
        fetcher_metrics.RESULTS["done"].inc()
    # frontier: two reports and one discovery batch, each delivered, wrapped and handled
    for _message in range(3):
        consumed.inc()
        with page_context(**page_of(report)), page_context(**page_of(report)):
            pass
    frontier_metrics.judged({"discovered": 1, "duplicates": 30, "out_of_scope": 2, "backlog": 0})
    frontier_metrics.TASKS_ISSUED.inc()
    # extractor: the page's context and its extraction time
    with page_context(**RAW_PAGE):
        started = time.perf_counter()
        extractor_metrics.EXTRACT_SECONDS.observe(time.perf_counter() - started)


def hooks_us_per_page(pages: int) -> float:
    consumed = metrics.AMQP_CONSUMED.labels("dualplane.tasks.normal")
    produced = (metrics.PRODUCED.labels("pages.raw"), metrics.PRODUCED.labels("fetch.events"))
    started = time.process_time()
    for _ in range(pages):
        one_page(consumed, produced)
    return (time.process_time() - started) / pages * 1e6


def scrape_ms(domains: int) -> float:
    """One scrape of a registry holding every series of the stages plus ``domains`` per-domain gauges."""
    rows = [({"domain": f"d{i}.example"}, 0.5) for i in range(domains)]
    metrics.probe("dualplane_bench_domains", "per-domain gauge", lambda: rows, labels=("domain",))
    started = time.perf_counter()
    for _ in range(20):
        generate_latest(REGISTRY)
    return (time.perf_counter() - started) / 20 * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pipeline-ms", type=float, default=None, help="CPU ms/page of all services")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)  # as `dualplane run`: the debug line is skipped
    per_page = statistics.median(hooks_us_per_page(args.pages) for _ in range(args.rounds))
    scrape = {n: round(scrape_ms(n), 2) for n in (0, 50, 1000)}
    result = {"hooks_us_per_page": round(per_page, 2), "scrape_ms_by_domain_series": scrape}
    if args.pipeline_ms:
        result["share_of_pipeline_cpu"] = round(per_page / (args.pipeline_ms * 1000), 5)
    if args.json:
        print(json.dumps(result))
        return
    print(f"metrics and log-context hooks: {per_page:.1f} µs CPU per page (median of {args.rounds} rounds)")
    if args.pipeline_ms:
        share = per_page / (args.pipeline_ms * 10)
        print(f"  = {share:.2f}% of the pipeline's {args.pipeline_ms} ms CPU per page")
    for domains, ms in scrape.items():
        print(f"one scrape with {domains} per-domain series: {ms} ms")


if __name__ == "__main__":
    main()
