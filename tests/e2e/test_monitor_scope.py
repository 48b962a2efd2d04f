"""A monitor keeps its scope across visits, and a page removed from the site leaves its schedule (#34).

A probe's finding: a ``--max-depth 1`` monitor of a shop admitted, on its second visit, the product
pages' links as if they were seeds (revisits were tasks at depth 0): 3,142 new URLs, every one a 404,
each revisited at its interval for ever. Here a shop of 20 product pages, each linking to two dead
paths, is watched at depth 1 by frontier, fetcher and extractor processes on the real brokers: no
visit asks for a dead path or adds a URL, and a product removed after the first visit answers 404 on
visits 2 and 3, then leaves the schedule with one ``gone`` change event and is not asked for again.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dualplane.brokers.amqp.messages import JobSpec, MonitorSpec, visit_job_id
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.control_plane.frontier.monitor_client import MonitorClient
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor.change_reader import decode_change
from tests.e2e.local_site import finished, local_site_settings, running
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import fresh_monitor
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PRODUCTS = 20
MONITOR = "shop-depth-1"
REMOVED = "/p/3"


class Shop:
    """A shop on loopback: a home page linking to its products, each product linking to two dead paths."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.removed: set[str] = set()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Shop:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def page(self, path: str) -> str | None:
        if path == "/":
            links = "".join(f'<a href="/p/{n}">product {n}</a>' for n in range(1, PRODUCTS + 1))
        elif path.startswith("/p/") and path not in self.removed:
            number = path.removeprefix("/p/")
            links = f'<a href="/">home</a><a href="/dead/{number}-a">a</a><a href="/gone/{number}-b">b</a>'
        else:
            return None
        return f"<html><head><title>{path}</title></head><body><h1>{path}</h1>{links}</body></html>"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        shop = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with shop.lock:
                    shop.requests[self.path] += 1
                    body = shop.page(self.path)
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def private(control_plane: ControlPlaneFactory) -> Settings:
    return local_site_settings(control_plane, domain_concurrency=8, fetch_concurrency=32, delay_jitter=0)


@pytest.fixture
def pipeline(private: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    yield from running(private, tmp_path)


def test_a_depth_1_monitor_adds_no_url_on_later_visits_and_a_removed_page_leaves_once(
    private: Settings, pipeline: Pipeline
) -> None:
    with Shop() as shop:
        for service in ("frontier", "fetcher", "extractor"):
            pipeline.start(service)
        job = JobSpec(
            job_id=visit_job_id(MONITOR, 1), allowed_domains=("127.0.0.1",), max_depth=1, monitor=MONITOR
        )
        spec = MonitorSpec(
            monitor_id=MONITOR, job=job, interval_s=3600, min_interval_s=600, max_interval_s=86_400
        )
        client = MonitorClient(private)
        finished(private, job.job_id, pipeline, client.create(spec, [f"{shop.base_url}/"]))
        first = dict(shop.requests)

        shop.removed.add(REMOVED)
        second_job = client.visit(MONITOR)
        finished(private, second_job, pipeline)
        after_second = fresh_monitor(client, MONITOR)
        third_job = client.visit(MONITOR)
        finished(private, third_job, pipeline)
        after_third = fresh_monitor(client, MONITOR)
        fourth_job = client.visit(MONITOR)
        finished(private, fourth_job, pipeline)
        asked = dict(shop.requests)

    pages = {"/", *(f"/p/{n}" for n in range(1, PRODUCTS + 1))}
    assert set(first) - {"/robots.txt"} == pages, first  # depth 1: the products, not their links
    dead = sorted(path for path in asked if path.startswith(("/dead/", "/gone/")))
    assert dead == [], f"later visits followed depth-2 links: {dead[:5]} ({len(dead)} in all)"
    assert after_second["scheduled"] == len(pages), after_second  # visit 2 adds no URL
    assert asked[REMOVED] == 3  # visit 1 (found), 2 and 3 (404 twice: gone), never on visit 4
    assert all(asked[path] == 4 for path in pages - {REMOVED}), asked
    assert after_third["scheduled"] == len(pages) - 1 and after_third["gone"] == 1, after_third
    events = [decode_change(m.value() or b"") for m in read_to_end(private.kafka, private.topics.changes)]
    schedule_events = [(e.kind, e.url, e.job_id) for e in events if e.kind != "changed"]
    assert schedule_events == [("gone", f"{shop.base_url}{REMOVED}", third_job)]
