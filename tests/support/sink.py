"""The S3 sink under test: settings with private names and bucket, topics filled, the sink in-process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.connectors.sink import S3Sink
from dualplane.connectors.sink.lag import sink_lag
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from tests.schemas.test_codec import page_record
from tests.support.hand_off import hand_off

BASE_TIME = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def with_sink(settings: Settings, bucket: str, **sink: Any) -> Settings:
    """``settings`` archiving to ``bucket`` with these ``DUALPLANE_SINK_*`` values (default: small files)."""
    values = {"bucket": bucket, "flush_records": 5, "idle_flush_s": 1.0, "retry_max_s": 2.0, **sink}
    return settings.model_copy(update={"sink": settings.sink.model_copy(update=values)})


def page(i: int, body: bytes | None = None, **fields: Any) -> dict[str, Any]:
    """Raw page ``i`` of a small shop, fetched one second after page ``i - 1``."""
    url = f"http://shop.example/p/{i}"
    html = (
        body if body is not None else f"<html><title>Page {i}</title><p>{'x' * (i % 7)}</p></html>".encode()
    )
    headers = {"content-type": "text/html; charset=utf-8", "content-encoding": "gzip", "server": "t"}
    return raw_page(html, url, fetched_at=BASE_TIME + timedelta(seconds=i), job_id="sink-job",
                    headers=headers, **fields)  # fmt: skip


def fill_raw_pages(settings: Settings, pages: list[dict[str, Any]]) -> None:
    ensure_data_plane_topics(settings)
    hand_off(settings, pages)


def record(i: int, version: int) -> dict[str, Any]:
    made = page_record(version)
    made.update(
        url=f"http://shop.example/p/{i}", canonical_url=f"http://shop.example/p/{i}", job_id="sink-job"
    )
    return made


def produce_records(settings: Settings, records: list[dict[str, Any]], *, commit: bool = True) -> None:
    """``records`` to the records topic in one Kafka transaction, committed or aborted."""
    ensure_data_plane_topics(settings)
    producer = clients.producer(settings.kafka, **{"transactional.id": f"test-{time.monotonic_ns()}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for made in records:
        value = schemas.encode("page_record", made, made["schema_version"])
        producer.produce(settings.topics.records, value, str(made["canonical_url"]).encode())
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


@contextmanager
def running_sink(settings: Settings) -> Iterator[S3Sink]:
    sink = S3Sink.from_settings(settings)
    thread = threading.Thread(target=sink.run, name="s3-sink", daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        sink.stop()
        thread.join(60)


def wait_archived(settings: Settings, timeout_s: float = 90) -> None:
    """Until the sink's group has committed everything on its topics."""
    deadline = time.monotonic() + timeout_s
    lag: dict[str, int] = {}
    while time.monotonic() < deadline:
        lag = sink_lag(settings)
        if lag and not any(lag.values()):
            return
        time.sleep(0.5)
    raise AssertionError(f"the sink did not catch up within {timeout_s:.0f} s: lag {lag}")
