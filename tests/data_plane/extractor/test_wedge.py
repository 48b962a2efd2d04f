"""The extractor when a transactional call never returns (seen after Kafka restarts, where
librdkafka's ``commit_transaction(60)`` blocked for minutes): it abandons the producer after its
own bound, and the successor, with the same transactional id, aborts the open transaction at
once, so the pages are extracted again and read_committed readers see each exactly once, well
before the abandoned transaction's 60 s timeout would have released them.

The wedge is injected (the first producer's commit waits on an event); Kafka and every other part
are real.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import Producer

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extractor import service as extractor_service
from dualplane.data_plane.extractor.records import iter_records
from dualplane.data_plane.extractor.service import Extractor
from tests.support.factories import ControlPlaneFactory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

URLS = [f"https://wedge.example/page/{i}" for i in range(3)]
TRANSACTION_TIMEOUT_S = 60  # the extractor's transaction.timeout.ms


class WedgeFirstCommit:
    """Stands in for ``clients.producer``: the first transactional producer's commit blocks;
    ``made`` counts the transactional producers."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.wedged_at: float | None = None
        self.made = 0

    def __call__(self, kafka: Any, **overrides: Any) -> Producer:
        config = clients.producer_config(kafka, **overrides)
        if "transactional.id" not in overrides:
            return Producer(config)
        self.made += 1
        return _WedgingProducer(config, self) if self.made == 1 else Producer(config)


class _WedgingProducer(Producer):
    def __init__(self, config: dict[str, Any], wedge: WedgeFirstCommit) -> None:
        super().__init__(config)
        self.wedge = wedge

    def commit_transaction(self, *args: Any) -> None:
        self.wedge.wedged_at = time.monotonic()
        self.wedge.release.wait()  # until the test ends: the call never returns in time


@pytest.fixture
def private(control_plane: ControlPlaneFactory) -> Settings:
    settings = control_plane.settings()
    ensure_data_plane_topics(settings)
    return settings


@pytest.fixture
def wedge(monkeypatch: pytest.MonkeyPatch) -> Iterator[WedgeFirstCommit]:
    wedge = WedgeFirstCommit()
    monkeypatch.setattr(clients, "producer", wedge)
    monkeypatch.setattr(extractor_service, "COMMIT_BOUND_S", 3.0)  # instead of 90 s
    yield wedge
    wedge.release.set()


def test_a_wedged_commit_is_abandoned_and_its_transaction_aborted_at_once(
    private: Settings, wedge: WedgeFirstCommit
) -> None:
    producer = Producer(clients.producer_config(private.kafka))
    for url in URLS:
        page = raw_page(f"<html><body><p>{url}</p></body></html>".encode(), url, fetched_at=datetime.now(UTC))
        producer.produce(private.topics.pages_raw, schemas.encode("raw_page", page), url.encode())
    assert producer.flush(30) == 0

    extractor = Extractor(private)
    thread = threading.Thread(target=extractor.run, name="extractor", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        seen: list[str] = []
        while time.monotonic() < deadline:
            seen = [record.url for record in iter_records(private, follow=False)]
            if len(seen) >= len(URLS):
                break
            time.sleep(0.5)
        visible_at = time.monotonic()
        time.sleep(2)  # anything late (a duplicate) would show now
        final = sorted(record.url for record in iter_records(private, follow=False))
    finally:
        extractor.stop()
        thread.join(30)

    assert wedge.wedged_at is not None, "the first commit was never attempted"
    assert wedge.made >= 2, "the extractor never replaced the wedged producer"
    assert final == sorted(URLS), f"expected each page once, read {final}"
    recovered_s = visible_at - wedge.wedged_at
    print(f"records visible {recovered_s:.1f} s after the commit wedged (bound 3 s)")
    assert recovered_s < TRANSACTION_TIMEOUT_S / 2, (
        f"{recovered_s:.0f} s: the open transaction was waited out, not aborted by the successor"
    )
    assert not thread.is_alive()
