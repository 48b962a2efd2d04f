"""An extractor killed inside an open transaction, three times: exactly one committed record per page.

The kill lands where it matters, not on a timer: each extractor process (the real service, see
``tests/support/extractor_worker.py``) commits one transaction, then announces its second one as
open, with its records produced, and holds it; the test kills it with SIGKILL on that line. A
``read_uncommitted`` reader then shows the records of the killed transactions really were in
Kafka; a ``read_committed`` one (what the contract promises) shows each page exactly once. Some
pages are on ``pages.raw`` twice, as after a fetcher that died between Kafka's confirm and its ack.
Each process runs with the same ``DUALPLANE_EXTRACT_INSTANCE_ID``, as a restarted slot would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from confluent_kafka import TopicPartition

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AT = datetime(2026, 11, 1, 12, tzinfo=UTC)
PAGES = [f"https://kill.example/p/{n}" for n in range(90)]
TWICE = PAGES[::9]  # these reach pages.raw twice
KILLS = 3


@pytest.fixture
def settings(control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory) -> Settings:
    base = control_plane.settings()
    made = base.model_copy(
        update={
            "s3": base.s3.model_copy(update={"bucket": s3_buckets.create()}),
            "extract": base.extract.model_copy(update={"batch_size": 10, "instance_id": "slot-0"}),
        }
    )
    ensure_data_plane_topics(made)
    return made


class Worker:
    """One extractor process with the transaction hook; its stdout is read line by line."""

    def __init__(self, settings: Settings, hold: int | None) -> None:
        env = {**os.environ, **settings.to_env(), "HOLD_TRANSACTION": str(hold or 0)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.extractor_worker"],
            env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip

    def wait_for_open_transaction(self, number: int, timeout_s: float = 180) -> str:
        """The announcement of transaction ``number`` (the process is inside it when this returns)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        for line in self.process.stdout:
            if line.startswith(f"OPEN TRANSACTION {number}:"):
                return line.strip()
            assert time.monotonic() < deadline, "no open transaction announced"
        raise AssertionError(f"the extractor exited ({self.process.wait()}) before transaction {number}")

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def _produce_pages(settings: Settings) -> None:
    producer = clients.producer(settings.kafka)
    for url in [*PAGES, *TWICE]:
        body = f"<html><head><title>{url}</title></head><body><p>page {url}</p></body></html>".encode()
        page = {**raw_page(body, url, fetched_at=AT, job_id="killed"), "task_id": url}
        producer.produce(settings.topics.pages_raw, schemas.encode("raw_page", page), url.encode())
    assert producer.flush(30) == 0


def _records(settings: Settings, *, committed: bool) -> list[str]:
    """The URL of every record on the topic, read committed or not."""
    if committed:
        messages = list(read_to_end(settings.kafka, settings.topics.records))
    else:
        messages = list(_read_uncommitted(settings, settings.topics.records))
    return [schemas.decode(message.value() or b"").record["url"] for message in messages]


def _read_uncommitted(settings: Settings, topic: str) -> Iterator[object]:
    uncommitted = {"isolation.level": "read_uncommitted"}
    consumer = clients.consumer(settings.kafka, "uncommitted-reader", **uncommitted)
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
        left = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + 30
        while left and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            if message.offset() >= ends[message.partition()] - 1:
                left.discard(message.partition())
            yield message
    finally:
        consumer.close()


def test_records_of_transactions_open_at_a_kill_never_become_visible_and_each_page_gets_one(
    settings: Settings, workers: list[Worker], capsys: pytest.CaptureFixture[str]
) -> None:
    _produce_pages(settings)
    announced = []
    for _ in range(KILLS):
        worker = Worker(settings, hold=2)  # commit one transaction, then hold the second open
        workers.append(worker)
        announced.append(worker.wait_for_open_transaction(2))
        worker.kill()
    last_kill = time.monotonic()
    finisher = Worker(settings, hold=None)
    workers.append(finisher)
    deadline = time.monotonic() + 180
    while set(_records(settings, committed=True)) != set(PAGES):
        assert time.monotonic() < deadline, "the pages were not all extracted after the kills"
        time.sleep(1)
    finished_s = time.monotonic() - last_kill

    committed = Counter(_records(settings, committed=True))
    written = Counter(_records(settings, committed=False))
    with capsys.disabled():
        print(f"\nkilled inside: {announced}")
        print(f"records written {sum(written.values())}, committed {sum(committed.values())} for "
              f"{len(PAGES)} pages ({len(TWICE)} of them on pages.raw twice); "
              f"all extracted {finished_s:.1f} s after the last kill")  # fmt: skip
    assert set(committed) == set(PAGES)
    assert set(committed.values()) == {1}, [url for url, n in committed.items() if n > 1]
    # The killed transactions had produced records: there, uncommitted, never visible.
    assert sum(written.values()) > sum(committed.values()), "no kill landed inside an open transaction"
