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

import schemas
from brokers.amqp.messages import JobSpec
from brokers.kafka.reader import read_to_end
from control_plane.frontier.client import JobClient
from control_plane.frontier.jobs import STALLED_AFTER_S
from control_plane.frontier.submit import default_scope
from core.settings import FetchSettings, LimitSettings, Settings
from core.web.urls import canonicalize, domain_of
from data_plane.extractor.records import PageRecord, iter_records
from data_plane.extractor.replay import plan, replay
from data_plane.throttle.view import ThrottleView
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
    it into v2 records, write its report, and summarise it against the site's ground truth."""
    settings = demo_settings(settings)
    job_id = f"demo-{uuid.uuid4().hex[:8]}"
    started_ms = int(time.time() * 1000)
    with SampleSite(spec) as site, ServiceGroup.build(settings, SERVICES), ThrottleView(settings) as view:
        site.set_anti_bot(PROTECTED_HOST, ANTI_BOT)
        watch = ThrottleWatch(domain_of(site.seeds[PROTECTED_HOST]), settings.limits.domain_concurrency)
        live = LiveView(site, view.start())
        started = time.monotonic()
        JobClient(settings).submit(
            JobSpec(job_id=job_id, allowed_domains=default_scope(site.seeds)), site.seeds
        )
        progress = _follow(settings, job_id=job_id, live=live, watch=watch, on_progress=on_progress,
                           timeout_s=timeout_s)  # fmt: skip
        duration_s = time.monotonic() - started
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        fetched = _pages_of_job(settings, job_id)
        records = _records_of_job(settings, job_id, expected=len(fetched))
        stats = site.stats()
    replayed = _replay(settings, started_ms)
    report = write_report(
        settings, read_job(settings, job_id), settings.stack.data_dir / "demo" / f"report-{job_id}"
    )
    return CrawlSummary(
        job_id=job_id,
        reachable=len(reachable),
        fetched=len(fetched & reachable),
        missing=sorted(reachable - fetched)[:20],
        done=int(progress.get("done", 0)),
        failed=int(progress.get("failed", 0)),
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
        replay=replayed,
        report=str(report),
    )


def _follow(
    settings: Settings,
    *,
    job_id: str,
    live: LiveView,
    watch: ThrottleWatch,
    on_progress: Callable[[dict[str, Any], LiveView], None],
    timeout_s: float,
) -> dict[str, Any]:
    """Report progress each half second until the job is finished (:class:`FinishRule`: its pages
    fetched and its records committed); a stalled job is an error, not a wait for the timeout."""
    snapshot: dict[str, Any] | None = None
    for snapshot, verdict in JobClient(settings).follow(
        job_id, timeout_s=timeout_s, seeds=len(live.site.seeds)
    ):
        watch.observe(live.view, live.site)
        on_progress(snapshot or {}, live)
        if verdict.finished:
            return snapshot or {}
        if verdict.stalled:  # something is broken: say so instead of waiting out the timeout
            raise TimeoutError(
                f"the demo crawl made no progress for {STALLED_AFTER_S:.0f} s; last progress {snapshot}"
            )
    raise TimeoutError(f"the demo crawl did not finish within {timeout_s:.0f} s; last progress {snapshot}")


def _replay(settings: Settings, from_time_ms: int) -> dict[str, Any]:
    """Re-extract the crawl's raw pages (from ``pages.raw``, no refetch) into a v2 records topic."""
    to_topic = f"{settings.topics.records}.v{REPLAY_SCHEMA_VERSION}"
    ranges = plan(settings, from_time_ms=from_time_ms)
    result = replay(settings, ranges, schema_version=REPLAY_SCHEMA_VERSION, to_topic=to_topic, processes=1)
    return {"pages": result.pages, "records": result.records, "to_topic": to_topic,
            "schema_version": REPLAY_SCHEMA_VERSION, "duration_s": result.duration_s,
            "from_time_ms": from_time_ms}  # fmt: skip


def _pages_of_job(settings: Settings, job_id: str) -> set[str]:
    """URLs of the job's pages in ``pages.raw`` (read from the beginning to the current end)."""
    urls = set()
    for message in read_to_end(settings.kafka, settings.topics.pages_raw):
        page = schemas.decode(message.value() or b"").record
        if page["job_id"] == job_id:
            urls.add(str(page["url"]))
    return urls


def _records_of_job(
    settings: Settings, job_id: str, expected: int, timeout_s: float = 30
) -> list[PageRecord]:
    """The job's committed records. :class:`FinishRule` called the job finished once the extractor
    had committed every raw page's record; the short wait is a safety margin for a reader whose view of
    ``records`` is a moment behind that commit, and returns at once when nothing is missing."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = list(iter_records(settings, follow=False, job_id=job_id))
        if len(records) >= expected or time.monotonic() > deadline:
            return records
        time.sleep(1)


def _product_row(record: PageRecord) -> dict[str, str]:
    product = record.product
    assert product is not None
    return {
        "name": product.name or "",
        "price": f"{product.price} {product.currency or ''}".strip(),
        "availability": product.availability or "",
        "url": record.canonical_url,
    }
