"""One honest verdict per job, from ``crawl --wait`` against the real brokers and services:

- a robots.txt that answers 503 once, then 200: asked again, and the pages get crawled (it used to
  end the job with 0 pages, "disallowed"); every fetched page has its record: exit 0;
- an extractor plugin that does not exist: every page is dead-lettered at extraction, so the job
  finishes with pages missing their records: exit 3, saying how many and why (it used to exit 0);
- a job whose only sitemap fails has no seed: said at once, exit 1 (it used to run until it stalled).
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

from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from tests.support.brokers import BrokerSession
from tests.support.cli import CliResult, run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e]

PAGES = {"/": '<a href="/a">a</a> <a href="/b">b</a>', "/a": "<p>page a</p>", "/b": "<p>page b</p>"}


class Site:
    """Three linked pages; robots.txt answers 503 to its first ``robots_failures`` requests."""

    def __init__(self, robots_failures: int) -> None:
        self.robots_failures = robots_failures
        self.requests: Counter[str] = Counter()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requests[self.path] += 1
                if self.path == "/robots.txt":
                    failing = site.requests[self.path] <= site.robots_failures
                    self._answer(503 if failing else 200, "down" if failing else "User-agent: *\nAllow: /\n")
                elif self.path in PAGES:
                    text = (
                        f"<html><head><title>{self.path}</title></head><body>{PAGES[self.path]}</body></html>"
                    )
                    self._answer(200, text, "text/html")
                else:
                    self._answer(404, "not found")

            def _answer(self, status: int, text: str, content_type: str = "text/plain") -> None:
                body = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def services(brokers: BrokerSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """One frontier, fetcher and extractor for the module's crawls (each crawl is a job of its own)."""
    tmp: Path = tmp_path_factory.mktemp("verdict")
    factory = ControlPlaneFactory(brokers.settings, tmp)
    settings = factory.settings(frontier_shards=1).model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=0, fetch_concurrency=8),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )
    pipeline = Pipeline(settings, tmp)
    for service in ("frontier", "fetcher", "extractor"):
        pipeline.start(service)
    yield settings
    pipeline.stop_all()
    factory.close()


def crawl(settings: Settings, *args: str) -> CliResult:
    return run_cli(
        "crawl", *args, "--wait", "--timeout", "180s", "--json", env=settings.to_env(), timeout_s=240
    )


def test_a_robots_txt_that_answered_503_once_is_asked_again_and_the_pages_get_crawled(
    services: Settings,
) -> None:
    site = Site(robots_failures=1)
    try:
        result = crawl(services, "--seed", f"{site.url}/", "--job", "robots-503-once")
    finally:
        site.close()

    assert result.exit_code == 0, result.stderr
    summary = result.json()
    assert (summary["complete"], summary["records"], summary["dead_lettered"]) == (True, 3, 0), summary
    assert "every fetched page has its record" in summary["why"]
    assert site.requests["/robots.txt"] == 2 and site.requests["/a"] == site.requests["/b"] == 1


def test_a_missing_extractor_plugin_is_no_success(services: Settings) -> None:
    site = Site(robots_failures=0)
    try:
        result = crawl(
            services, "--seed", f"{site.url}/", "--job", "no-plugin", "--extractor", "nonexistent-plugin"
        )
    finally:
        site.close()

    assert result.exit_code == 3, (result.exit_code, result.stderr)
    summary = result.json()
    assert (summary["finished"], summary["complete"], summary["records"]) == (True, False, 0), summary
    assert "3 page(s) dead-lettered (0 at fetch, 3 at extraction)" in summary["why"]
    assert "nonexistent-plugin" in summary["why"]  # why: the extractor's reason, as the dead letters say
    assert "finished with pages missing their records" in result.stderr


def test_a_job_whose_sitemaps_all_failed_says_so_at_once(services: Settings) -> None:
    site = Site(robots_failures=0)
    started = time.monotonic()
    try:
        result = crawl(services, "--sitemap", f"{site.url}/missing-sitemap.xml", "--job", "no-seeds")
    finally:
        site.close()

    assert result.exit_code == 1, result.stderr
    assert time.monotonic() - started < 60, "it waited instead of saying so at once"
    assert "has no seed: every seed source failed" in result.stderr
    assert result.json()["seeds"] == 0
