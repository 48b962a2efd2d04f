"""records.latest and change events against the real Kafka: one event for the changed version of a
page, none for an unchanged one (new ads, token, timestamp) nor for a 304; the table holds the latest.

Two extractor runs: the second restores the URL's state from records.latest, as an extractor does
that is assigned a partition another one wrote.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extractor.change_reader import iter_changes, latest_records
from dualplane.data_plane.extractor.service import Extractor
from tests.support.factories import ControlPlaneFactory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

URL, OTHER = "https://shop.example/kettle", "https://shop.example/about"
T1 = datetime(2026, 11, 1, 12, tzinfo=UTC)


def _page(price: str, token: str) -> bytes:
    """A product page; ``token`` stands for what changes on every fetch: a CSRF token, an advert, a
    rendering time. The price is in the structured data only."""
    return f"""<html><head><title>Copper kettle</title>
<script type="application/ld+json">{{"@context":"https://schema.org","@type":"Product","name":"Copper kettle",
"offers":{{"@type":"Offer","price":"{price}","priceCurrency":"EUR","availability":"https://schema.org/InStock"}}}}
</script><script>window.renderedAt = "{token}";</script></head>
<body><nav><a href="/">Home</a></nav><main><h1>Copper kettle</h1>
<p>A hand-hammered copper kettle that boils a litre in four minutes.</p>
<p>Made in a small workshop, it keeps water hot long after the stove is off.</p>
<form><input type="hidden" name="csrf" value="{token}"><button>Add to cart</button></form></main>
<aside class="ad">Advert {token}</aside></body></html>""".encode()


def _fetched(body: bytes, fetched_at: datetime, **fields: Any) -> dict[str, Any]:
    """A raw page of ``URL`` in job "watch", fetched by a task of its own (a revisit is a new task)."""
    return {
        **raw_page(body, URL, fetched_at=fetched_at, job_id="watch"),
        "task_id": f"t-{fetched_at:%H}",
        **fields,
    }


def _produce(settings: Settings, *pages: dict[str, Any]) -> None:
    producer = clients.producer(settings.kafka)
    for page in pages:  # keyed by URL like the fetcher's: a URL's versions meet in one partition
        producer.produce(
            settings.topics.pages_raw, schemas.encode("raw_page", page), str(page["url"]).encode()
        )
    assert producer.flush(30) == 0


def _extract_all(settings: Settings) -> Extractor:
    """Run an extractor until it committed every page of pages.raw."""
    extractor = Extractor(settings)
    thread = threading.Thread(target=extractor.run, name="extractor", daemon=True)
    thread.start()
    try:
        assert _wait_for(lambda: _all_committed(settings, extractor.group_id), 60), "pages left unextracted"
    finally:
        extractor.stop()
        thread.join(30)
    return extractor


def _all_committed(settings: Settings, group_id: str) -> bool:
    topic = settings.topics.pages_raw
    consumer = clients.consumer(settings.kafka, group_id)
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        committed = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions
        }
    finally:
        consumer.close()
    return all(max(c.offset, 0) >= ends[c.partition] for c in committed)


def _wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def test_a_changed_page_makes_one_event_an_unchanged_page_or_a_304_none(
    control_plane: ControlPlaneFactory,
) -> None:
    settings = control_plane.settings()
    ensure_data_plane_topics(settings)
    t2, t3, t4 = (T1 + timedelta(hours=hours) for hours in (1, 2, 3))
    _produce(
        settings,
        _fetched(_page("19.99", "a1"), T1),
        raw_page(b"<html><title>About</title><p>About us.</p></html>", OTHER, fetched_at=T1),
    )
    _extract_all(settings)  # first records: no previous state, so no event

    _produce(
        settings,
        _fetched(_page("17.49", "b2"), t2),  # the price changed
        _fetched(_page("17.49", "c3"), t3),  # only its token, advert and time did
        _fetched(b"", t4, status=304, content_type=None),  # not modified
    )
    second = _extract_all(settings)  # a new extractor: restores the URL's state from records.latest

    events = list(iter_changes(settings, follow=False))
    assert [(e.url, e.changed) for e in events] == [(URL, ["price"])]
    [event] = events
    assert (event.price_from, event.price_to) == (Decimal("19.99"), Decimal("17.49"))
    assert (event.currency_to, event.availability_to, event.title_to) == ("EUR", "in_stock", "Copper kettle")
    assert (event.previous_fetched_at, event.fetched_at) == (T1, t2)
    assert event.text_fingerprint_from == event.text_fingerprint_to is not None
    assert (second.records, second.not_modified, second.latest.changes, second.duplicates) == (2, 1, 1, 0)

    records = list(read_to_end(settings.kafka, settings.topics.records))
    assert len(records) == 4  # 2 + 2: the 304 made none
    latest = latest_records(settings)
    assert sorted(latest) == [OTHER, URL]
    assert latest[URL].fetched_at == t3 and latest[URL].product is not None
    assert latest[URL].product.price == Decimal("17.49")
    assert list(latest_records(settings, url=OTHER)) == [OTHER]

    admin = clients.admin(settings.kafka)
    resource = ConfigResource("topic", settings.topics.records_latest)
    config = admin.describe_configs([resource])[resource].result(timeout=10)
    assert config["cleanup.policy"].value == "compact"
    topics = admin.list_topics(timeout=10).topics
    assert len(topics[settings.topics.records_latest].partitions) == len(
        topics[settings.topics.pages_raw].partitions
    )
