"""The extractor through an S3 outage: it holds at the page whose body it cannot read, commits the
pages before it, dead-letters nothing, and goes on once S3 answers again.

The outage is real: the extractor reaches S3 through a TCP relay that the test closes and opens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
from confluent_kafka import TopicPartition

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.connectors.storage.claim_check import ClaimCheckStore
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extractor.records import iter_records
from dualplane.data_plane.extractor.service import STORE_RETRY_S, Extractor
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.tcp_relay import TcpRelay, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AT = datetime(2026, 11, 1, 12, tzinfo=UTC)
BEFORE, CLAIMED, AFTER = "https://cc.example/before", "https://cc.example/claimed", "https://cc.example/after"


@pytest.fixture
def private(control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory) -> Settings:
    settings = control_plane.settings()
    settings = settings.model_copy(
        update={"s3": settings.s3.model_copy(update={"bucket": s3_buckets.create()})}
    )
    ensure_data_plane_topics(settings)
    return settings


@pytest.fixture
def relay(private: Settings) -> Iterator[TcpRelay]:
    endpoint = urlsplit(private.s3.endpoint_url or "")
    relay = TcpRelay(free_port(), (endpoint.hostname or "127.0.0.1", endpoint.port or 80))
    yield relay
    relay.close()


def _produce_three_pages(settings: Settings) -> int:
    """Pages before, behind a claim check and after, in that order on partition 0; the claimed offset."""
    big = b"<html><body>" + b"<p>words behind a claim check</p>" * 30_000 + b"</body></html>"
    check = ClaimCheckStore.from_settings(settings.s3).put(big)
    claimed = {
        **raw_page(b"", CLAIMED, fetched_at=AT),
        "claim_check": check.uri,
        "body_sha256": check.sha256,
        "body_bytes": check.size_bytes,
    }
    producer = clients.producer(settings.kafka)
    for page in (
        raw_page(b"<p>before</p>", BEFORE, fetched_at=AT),
        claimed,
        raw_page(b"<p>after</p>", AFTER, fetched_at=AT),
    ):
        producer.produce(
            settings.topics.pages_raw,
            schemas.encode("raw_page", page),
            str(page["url"]).encode(),
            partition=0,
        )
    assert producer.flush(30) == 0
    located = {
        (m.key() or b"").decode(): m.offset() for m in read_to_end(settings.kafka, settings.topics.pages_raw)
    }
    return int(located[CLAIMED] or 0)


def _urls(settings: Settings) -> set[str]:
    return {record.url for record in iter_records(settings, follow=False)}


def _wait_for(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(1)


def test_an_s3_outage_holds_the_extractor_at_the_page_and_loses_nothing(
    private: Settings, relay: TcpRelay
) -> None:
    claimed_offset = _produce_three_pages(private)
    through_relay = private.s3.model_copy(update={"endpoint_url": f"http://127.0.0.1:{relay.port}"})
    extractor = Extractor(private, bodies=ClaimCheckStore.from_settings(through_relay))
    thread = threading.Thread(target=extractor.run, name="extractor", daemon=True)
    thread.start()
    try:
        _wait_for(lambda: BEFORE in _urls(private), 90)
        time.sleep(STORE_RETRY_S + 5)  # at least one more round against the closed relay
        held_at = _committed(private, extractor.group_id)
        during = _urls(private)

        relay.open()  # S3 is back
        _wait_for(lambda: {BEFORE, CLAIMED, AFTER} <= _urls(private), 90)
    finally:
        extractor.stop()
        thread.join(30)

    assert during == {BEFORE}  # the page after the held one waited its turn
    assert held_at == claimed_offset
    assert list(read_to_end(private.kafka, private.topics.dead_letters)) == []
    assert not thread.is_alive()


def _committed(settings: Settings, group_id: str) -> int:
    consumer = clients.consumer(settings.kafka, group_id)
    try:
        [position] = consumer.committed([TopicPartition(settings.topics.pages_raw, 0)], timeout=10)
    finally:
        consumer.close()
    return int(position.offset)
