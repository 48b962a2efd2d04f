"""``pages.raw`` is at least once across fetcher crashes, and says so in each copy.

A fetcher acks its task only after Kafka confirmed the raw page. One that dies between the two
leaves the task to be delivered again, unchanged (same task id), and fetched again: Kafka then holds
the page twice. Each copy carries the task's id and its own fetch time, so a consumer drops the later
copies by (job, URL, task id), as the extractor does (``page_key``); a revisit is a new task, kept.
Here the real fetcher fetches one task twice, as after such a crash, against real Kafka.
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import pytest

from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.control_plane.fetcher.worker import Fetcher
from dualplane.core.settings import FetchSettings, Settings
from dualplane.data_plane.extractor.handled import page_key
from tests.support.factories import ControlPlaneFactory
from tests.support.pipeline import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def page_url() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html><body><p>a page</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/a"
    server.shutdown()
    server.server_close()


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    made = control_plane.settings().model_copy(update={"fetch": FetchSettings(allow_hosts="127.0.0.1")})
    prepare_data_plane(made)
    return made


async def test_a_task_fetched_again_after_a_crash_leaves_a_copy_consumers_can_drop(
    settings: Settings, page_url: str
) -> None:
    task = CrawlTask(job_id="once", trace_id="t", url=page_url, domain=page_url.split("/")[2], depth=0)
    fetcher = Fetcher.from_settings(settings)
    try:
        first = await fetcher(task)
        again = await fetcher(task)  # delivered again: its fetcher died after Kafka's confirm, before the ack
    finally:
        await fetcher.aclose()
    assert first.outcome is again.outcome is Outcome.OK

    pages = [page for page in read_topic(settings, settings.topics.pages_raw) if page["job_id"] == "once"]

    assert len(pages) == 2  # at least once: the raw page is there twice
    assert {page["task_id"] for page in pages} == {task.task_id}  # both name the task they fetched
    assert pages[0]["fetched_at"] < pages[1]["fetched_at"]  # and when: the copy is the later one
    kept = {page_key(p["job_id"], p["url"], p["task_id"]): p for p in reversed(pages)}  # the first wins
    assert [page["fetched_at"] for page in kept.values()] == [pages[0]["fetched_at"]]
