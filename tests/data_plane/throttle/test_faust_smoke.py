"""Faust smoke test: a real worker consumes a topic into a windowed table and answers correctly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from dualplane.core.settings import Settings
from tests.support.factories import KafkaClientFactory, KafkaTopicFactory, unique_name
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXPECTED = {"example.com": 7, "example.org": 3}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Worker:
    topic: str
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def require_running(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"the Faust worker exited:\n{self.log_path.read_text()[-3000:]}")

    def wait_until_serving(self, deadline: float) -> None:
        while _count(self.base_url, "warmup") is None:
            self.require_running()
            assert time.monotonic() < deadline, f"the Faust worker never answered; see {self.log_path}"
            time.sleep(0.5)


@pytest.fixture
def faust_worker(settings: Settings, kafka_topics: KafkaTopicFactory, tmp_path: Path) -> Iterator[Worker]:
    topic = kafka_topics.create("faust-in")
    port = _free_port()
    env = {
        **os.environ,
        "SMOKE_APP_ID": unique_name("faust"),
        "SMOKE_BOOTSTRAP": settings.kafka.bootstrap_servers,
        "SMOKE_TOPIC": topic,
        "SMOKE_WEB_PORT": str(port),
    }
    log_path = tmp_path / "worker.log"
    log = log_path.open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "faust", "-A", "tests.data_plane.throttle.faust_window_app",
         "--datadir", str(tmp_path / "faust-data"), "worker", "--loglevel", "warn"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
    )  # fmt: skip
    try:
        yield Worker(topic, f"http://127.0.0.1:{port}", worker, log_path)
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()


def _count(base_url: str, key: str) -> int | None:
    try:
        return int(httpx.get(f"{base_url}/count/{key}/", timeout=2).json()["count"])
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def test_windowed_table_counts_events_per_key(faust_worker: Worker, kafka: KafkaClientFactory) -> None:
    topic, base_url = faust_worker.topic, faust_worker.base_url
    deadline = time.monotonic() + 90
    faust_worker.wait_until_serving(deadline)

    producer = kafka.producer()
    for key, n in EXPECTED.items():
        for _ in range(n):
            producer.produce(topic, b"{}", key=key.encode())
    assert producer.flush(30) == 0

    answers: dict[str, int | None] = {}
    while time.monotonic() < deadline:
        answers = {key: _count(base_url, key) for key in EXPECTED}
        if answers == EXPECTED:
            break
        faust_worker.require_running()
        time.sleep(0.5)
    assert answers == EXPECTED, faust_worker.log_path.read_text()[-3000:]
    assert _count(base_url, "never-seen") == 0
