"""Discovery at fetch speed: links go from the fetcher to the frontier, never waiting for extraction.

A crawl runs to its end with the extractor stopped: frontier and fetcher alone reach every reachable
page (the site's request log says so, once each). Started afterwards, the extractor commits one
record per page. And a page with more links than ``DUALPLANE_FETCH_MAX_LINKS_PER_PAGE`` hands on the
first ones and the job's progress counts the rest (issue #27, P5).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.control_plane.frontier.jobs import FinishRule
from dualplane.control_plane.frontier.progress import ProgressReader
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic
from tests.support.site_log import served_pages

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = SiteSpec(seed=23, hosts=2, pages_per_host=30, latency_ms=5)
MANY_LINKS = 2100


@pytest.fixture
def settings_for_crawl(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=3, domain_delay_ms=10, fetch_concurrency=24),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0.2, permit_wait_s=0.5),
        }
    )


@pytest.fixture
def pipeline(settings_for_crawl: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    pipeline = Pipeline(settings_for_crawl, tmp_path)
    yield pipeline
    pipeline.stop_all()


def _crawled(settings: Settings, job_id: str, timeout_s: float) -> dict[str, Any]:
    """Wait until the frontier has nothing left to do for the job (extraction not asked: it is stopped)."""
    rule = FinishRule(lambda: 0, quiet_s=4)
    deadline = time.monotonic() + timeout_s
    with ProgressReader(settings) as reader:
        while time.monotonic() < deadline:
            if rule.finished(reader.job(job_id)):
                return rule.last or {}
            time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not finish within {timeout_s} s: {rule.last}")


def test_the_crawl_reaches_every_page_with_the_extractor_stopped_then_every_page_gets_a_record(
    settings_for_crawl: Settings, pipeline: Pipeline
) -> None:
    settings = settings_for_crawl
    with SampleSite(SITE) as site:
        pipeline.start("frontier")
        pipeline.start("fetcher")
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        domains = tuple(domain_of(seed) for seed in site.seeds)
        JobProbe(settings).submit(JobSpec(job_id="no-extractor", allowed_domains=domains), site.seeds)

        progress = _crawled(settings, "no-extractor", timeout_s=180)
        served = served_pages(site)

    raw_pages = Counter(record["url"] for record in read_topic(settings, settings.topics.pages_raw))
    assert set(served) == reachable, pipeline.logs()  # the site's own log: every page, without extraction
    assert set(served.values()) == {1} and served == raw_pages
    assert read_topic(settings, settings.topics.records) == []  # nothing was extracted meanwhile
    assert progress["dead_lettered"] == 0 and progress["links_over_limit"] == 0

    pipeline.start("extractor")
    JobProbe(settings).wait_finished("no-extractor", timeout_s=120)  # the whole rule: extractor caught up

    records = Counter(record["url"] for record in read_topic(settings, settings.topics.records))
    assert records == raw_pages, pipeline.logs()  # one committed record per page


class _ManyLinks(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_error(404)
            return
        links = "".join(f'<a href="/p/{n}">{n}</a>' for n in range(MANY_LINKS)) if self.path == "/" else ""
        body = f"<html><body><p>page {self.path}</p>{links}</body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_links_over_the_per_page_cap_are_counted_in_the_job_progress_and_logged(
    settings_for_crawl: Settings, pipeline: Pipeline
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ManyLinks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seed = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        pipeline.start("frontier")
        pipeline.start("fetcher")
        spec = JobSpec(job_id="many-links", allowed_domains=(domain_of(seed),), max_depth=0)
        JobProbe(settings_for_crawl).submit(spec, [seed])

        progress = _crawled(settings_for_crawl, "many-links", timeout_s=120)
    finally:
        server.shutdown()
        server.server_close()

    assert progress["links_over_limit"] == MANY_LINKS - 2000, progress
    assert progress["out_of_scope"] == 2000, progress  # the first 2000 reached the frontier (beyond depth 0)
    assert progress["done"] == 1
    assert len(pipeline.lines("over DUALPLANE_FETCH_MAX_LINKS_PER_PAGE are left out")) == 1, pipeline.logs()
