"""The demo crawl: the sample site crawled by the real services, watched live, checked at the end.

The frontier, a fetcher and the extractor run in this process (one thread each) against the
embedded stack, under names of their own (``dualplane-demo.*``) so the demo never disturbs a
real deployment. The summary compares the crawl with the site's ground truth from both sides:
what the site served, and what reached Kafka's ``pages.raw``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import schemas
from control_plane import amqp
from control_plane.amqp.messages import JobSpec
from control_plane.amqp.publisher import confirmed_channel
from control_plane.amqp.topology import Topology
from control_plane.frontier.jobs import FinishRule
from control_plane.frontier.progress import ProgressReader
from control_plane.frontier.submit import submit_job
from data_plane.extractor.records import PageRecord, iter_records
from data_plane.kafka.reader import read_to_end
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.namespaces import private_namespace
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.services import Service, build

DEMO_PREFIX = "dualplane-demo"
SERVICES = ("frontier", "fetcher", "extractor")
STALL_S = 90.0  # no counter moved for this long: something is broken, say so instead of waiting


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

    @property
    def ok(self) -> bool:
        polite = all(n <= self.domain_concurrency for n in self.max_concurrency_per_host.values())
        complete = self.fetched == self.reachable and self.records == self.fetched
        return not self.missing and complete and polite


def demo_settings(settings: Settings) -> Settings:
    """The demo's private names, loopback opened for the sample site, polite but quick limits."""
    private = private_namespace(settings, DEMO_PREFIX, settings.stack.data_dir / "demo" / "frontier")
    return private.model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=50, fetch_concurrency=16),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )


@contextmanager
def running_services(settings: Settings, names: tuple[str, ...] = SERVICES) -> Iterator[list[Service]]:
    """Run the named services on threads for the length of the block, then stop them cleanly."""
    services = [service for name in names for service in build(settings, name)]
    threads = [threading.Thread(target=s.run, name=f"demo-{s.name}", daemon=True) for s in services]
    for thread in threads:
        thread.start()
    try:
        yield services
    finally:
        for service in services:
            service.stop()
        for thread, service in zip(threads, services, strict=True):
            thread.join(timeout=30)
            service.close()


def crawl_sample_site(
    settings: Settings,
    spec: SiteSpec,
    on_progress: Callable[[dict[str, Any], SampleSite], None],
    timeout_s: float = 600,
) -> CrawlSummary:
    """Crawl a fresh sample site end to end and summarise it against the site's ground truth."""
    settings = demo_settings(settings)
    job_id = f"demo-{uuid.uuid4().hex[:8]}"
    with SampleSite(spec) as site, running_services(settings):
        started = time.monotonic()
        spec_ = JobSpec(job_id=job_id, allowed_domains=tuple(domain_of(seed) for seed in site.seeds))
        connection = amqp.connect(settings.amqp)
        try:
            submit_job(confirmed_channel(connection), Topology(settings.queues), spec_, site.seeds)
            progress = _follow(
                settings, job_id=job_id, site=site, on_progress=on_progress, timeout_s=timeout_s
            )
        finally:
            connection.close()
        duration_s = time.monotonic() - started
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        fetched = _pages_of_job(settings, job_id)
        records = _records_of_job(settings, job_id, expected=len(fetched))
        stats = site.stats()
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
    )


def _follow(
    settings: Settings,
    *,
    job_id: str,
    site: SampleSite,
    on_progress: Callable[[dict[str, Any], SampleSite], None],
    timeout_s: float,
) -> dict[str, Any]:
    """Report progress each half second until the job is finished (:class:`FinishRule`)."""
    rule = FinishRule.from_settings(settings)
    deadline = time.monotonic() + timeout_s
    with ProgressReader(settings) as reader:
        while time.monotonic() < deadline:
            now = reader.job(job_id) or {}
            on_progress(now, site)
            if rule.finished(now):
                return now
            if rule.unchanged_for_s() > STALL_S:
                raise TimeoutError(
                    f"the demo crawl made no progress for {STALL_S:.0f} s; last progress {now}"
                )
            time.sleep(0.5)
    raise TimeoutError(f"the demo crawl did not finish within {timeout_s:.0f} s; last progress {rule.last}")


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
    """The job's committed records, waiting briefly for the extractor's last transaction."""
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
