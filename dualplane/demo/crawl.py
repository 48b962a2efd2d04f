"""The demo crawl: the sample site crawled by the real services, watched live, checked at the end.

The frontier, a fetcher and the extractor run in this process (one thread each) against the
embedded stack, in the namespace ``demo`` (names ``dualplane-demo.*``) so the demo never disturbs
a real deployment; ``--namespace demo`` reads its data afterwards. The summary compares the crawl
with the site's ground truth from both sides: what the site served, and what reached Kafka's
``pages.raw``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dualplane.control_plane.frontier import JobClient, Look
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.data_plane.extractor import PageRecord, ReplayResult, iter_records, plan_replay, replay_pages
from dualplane.data_plane.throttle import ThrottleView
from dualplane.demo.antibot import ANTI_BOT, PROTECTED_HOST, ThrottleWatch, throttle_tuning
from dualplane.demo.live import LiveView
from dualplane.namespaces import named_namespace
from dualplane.report import read_job, write_report
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.services import ServiceGroup

DEMO_NAMESPACE = "demo"
SERVICES = ("frontier", "fetcher", "extractor", "throttle")
REPLAY_SCHEMA_VERSION = 2


@dataclass(frozen=True)
class CrawlSummary:
    """What the demo crawl did, and whether it matched the site's ground truth."""

    job_id: str
    reachable: int
    fetched: int
    missing: list[str]
    done: int
    failed: int
    duration_s: float
    pages_per_s: float
    domain_concurrency: int
    max_concurrency_per_host: dict[str, int]
    topics: dict[str, str]
    records: int
    sample_products: list[dict[str, str]]
    throttle: str  # the protected host's story: halved when, recovered when
    throttled_and_recovered: bool
    replay: dict[str, Any]  # pages, records, to_topic, schema_version, duration_s
    report: str  # path of the job's HTML report

    @property
    def ok(self) -> bool:
        polite = all(n <= self.domain_concurrency for n in self.max_concurrency_per_host.values())
        complete = self.fetched == self.reachable and self.records == self.fetched
        replayed = self.replay["records"] == self.records
        return not self.missing and complete and polite and replayed and self.throttled_and_recovered


def demo_settings(settings: Settings) -> Settings:
    """The demo's private names, loopback opened for the sample site, polite but quick limits."""
    private = named_namespace(settings, DEMO_NAMESPACE)
    return private.model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=50, fetch_concurrency=16),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
            "throttle": throttle_tuning(private.throttle),
        }
    )


def crawl_sample_site(
    settings: Settings,
    spec: SiteSpec,
    on_progress: Callable[[dict[str, Any], LiveView], None],
    timeout_s: float = 600,
) -> CrawlSummary:
    """Crawl a fresh sample site (its first host blocking beyond a few requests/s) end to end, replay
    it into v2 records, write its report, and summarise it against the site's ground truth.

    Every step asks a stage: the job client submits the job and follows it until :class:`FinishRule`
    calls it finished (its pages fetched and their records committed; a stalled job is an error, not
    a wait for the timeout), the extractor's readers and replay read the records, the report reads
    the job's fetch events."""
    settings = demo_settings(settings)
    job_id = f"demo-{uuid.uuid4().hex[:8]}"
    to_topic = f"{settings.topics.records}.v{REPLAY_SCHEMA_VERSION}"
    started_ms = int(time.time() * 1000)
    with SampleSite(spec) as site, ServiceGroup.build(settings, SERVICES), ThrottleView(settings) as view:
        site.set_anti_bot(PROTECTED_HOST, ANTI_BOT)
        watch = ThrottleWatch(domain_of(site.seeds[PROTECTED_HOST]), settings.limits.domain_concurrency)
        live = LiveView(site, view.start())

        def look(look: Look) -> None:
            watch.observe(live.view, site)
            on_progress(look[0] or {}, live)

        jobs = JobClient(settings)
        started = time.monotonic()
        jobs.crawl(site.seeds, job_id=job_id)
        progress, verdict = jobs.wait(job_id, timeout_s=timeout_s, seeds=len(site.seeds), on_look=look)
        duration_s = time.monotonic() - started
        if not verdict.finished:
            raise TimeoutError(f"the demo crawl did not finish: {verdict.why}; last progress {progress}")
        records = list(iter_records(settings, follow=False, job_id=job_id))
        stats = site.stats()
        reachable = {canonicalize(url) for url in site.reachable_urls()}
    ranges = plan_replay(
        settings, from_time_ms=started_ms
    )  # the crawl's raw pages, re-extracted without a refetch
    replayed = replay_pages(
        settings, ranges, schema_version=REPLAY_SCHEMA_VERSION, to_topic=to_topic, processes=1
    )
    job = read_job(settings, job_id)
    report = write_report(settings, job, settings.stack.data_dir / "demo" / f"report-{job_id}")
    fetched = {event["url"] for event in job.events if event["outcome"] == "ok"}
    return CrawlSummary(
        job_id=job_id,
        reachable=len(reachable),
        fetched=len(fetched & reachable),
        missing=sorted(reachable - fetched)[:20],
        done=int(progress.get("done", 0)) if progress else 0,
        failed=int(progress.get("failed", 0)) if progress else 0,
        duration_s=round(duration_s, 1),
        pages_per_s=round(len(fetched) / duration_s, 1),
        domain_concurrency=settings.limits.domain_concurrency,
        max_concurrency_per_host={host.url: host.max_in_flight for host in stats.hosts},
        topics={
            "pages_raw": settings.topics.pages_raw,
            "fetch_events": settings.topics.fetch_events,
            "records": settings.topics.records,
        },
        records=len(records),
        sample_products=[_product_row(r) for r in records if r.product and r.product.price is not None][:3],
        throttle=watch.story(),
        throttled_and_recovered=watch.done,
        replay=_replay_row(replayed, started_ms),
        report=str(report),
    )


def _replay_row(result: ReplayResult, from_time_ms: int) -> dict[str, Any]:
    return {"pages": result.pages, "records": result.records, "to_topic": result.to_topic,
            "schema_version": result.schema_version, "duration_s": result.duration_s,
            "from_time_ms": from_time_ms}  # fmt: skip


def _product_row(record: PageRecord) -> dict[str, str]:
    product = record.product
    assert product is not None
    return {
        "name": product.name or "",
        "price": f"{product.price} {product.currency or ''}".strip(),
        "availability": product.availability or "",
        "url": record.canonical_url,
    }
