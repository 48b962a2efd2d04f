"""A raw page whose links the frontier could never take is extracted like any other; the pages after
it go on.

Found auditing issue 16 ("a validation failure anywhere becomes a dead letter"): a page's links were
made into discovery messages after its record, outside the net that dead-letters a failed page. A
raw page with a negative depth (written by hand or by a broken producer: ``pages.raw`` is outside
input) failed the messages' validation there; the transaction was aborted, the extractor resumed at
the committed offsets and failed again, for ever, and no page after it was extracted: the 8 KB
link's crash loop (a probe's finding) by another route. That page was dead-lettered then; since
links go to the frontier from the fetcher (issue 23), the extractor makes no discovery messages and
reads no depth, so the page simply gets its record (its links listed in it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extractor.records import iter_records
from dualplane.data_plane.extractor.service import Extractor
from tests.support.factories import ControlPlaneFactory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AT = datetime(2026, 11, 1, 12, tzinfo=UTC)
POISON, AFTER = "https://poison.example/negative-depth", "https://poison.example/after"
LINKED = b'<html><body><p>A page with a link.</p><a href="/next">next</a></body></html>'


def _wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def test_a_page_with_a_negative_depth_is_extracted_and_so_is_the_next_page(
    control_plane: ControlPlaneFactory,
) -> None:
    settings: Settings = control_plane.settings()
    ensure_data_plane_topics(settings)
    producer = clients.producer(settings.kafka)
    for page in (
        {**raw_page(LINKED, POISON, fetched_at=AT), "depth": -5},
        raw_page(LINKED, AFTER, fetched_at=AT),
    ):
        value = schemas.encode("raw_page", page)
        producer.produce(settings.topics.pages_raw, value, str(page["url"]).encode(), partition=0)
    assert producer.flush(30) == 0

    cpu_pages_before = REGISTRY.get_sample_value("dualplane_extract_cpu_seconds_count") or 0.0
    extractor = Extractor(settings)
    thread = threading.Thread(target=extractor.run, name="extractor", daemon=True)
    thread.start()
    try:
        records: dict[str, list[str]] = {}

        def after_extracted() -> bool:
            for record in iter_records(settings, follow=False):
                records[record.url] = [link.url for link in record.links]
            return AFTER in records

        extracted = _wait_for(after_extracted, 60)
    finally:
        extractor.stop()
        thread.join(30)

    assert extracted, "the page after the poison one was never extracted (the extractor crash-loops)"
    # Each page's extraction CPU is recorded by the service (the crawl benchmark reads it).
    assert (REGISTRY.get_sample_value("dualplane_extract_cpu_seconds_count") or 0.0) >= cpu_pages_before + 2
    letters = [
        schemas.decode(m.value() or b"").record
        for m in read_to_end(settings.kafka, settings.topics.dead_letters)
    ]
    assert letters == []
    assert records == {url: ["https://poison.example/next"] for url in (POISON, AFTER)}
