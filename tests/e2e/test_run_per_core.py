"""``dualplane run extractor`` uses every core by default (#23.4): one extractor process per usable
core, and ``pages.raw`` grown to a partition per extractor (a partition feeds one group member)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.processes import usable_cores
from tests.support.factories import ControlPlaneFactory
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def partitions(settings: Settings, topic: str) -> int:
    return len(clients.admin(settings.kafka).list_topics(topic, timeout=30).topics[topic].partitions)


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_run_extractor_starts_one_process_per_core_and_grows_pages_raw(
    control_plane: ControlPlaneFactory, tmp_path: Path
) -> None:
    settings = control_plane.settings()
    settings = settings.model_copy(update={"topics": settings.topics.model_copy(update={"partitions": 1})})
    ensure_data_plane_topics(settings)  # an existing pages.raw with one partition
    assert partitions(settings, settings.topics.pages_raw) == 1
    cores = usable_cores()
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "dualplane", "run", "extractor", "--log-level", "warning"],
            env={**os.environ, **settings.to_env()},
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
        )
    try:
        expected = cores if cores > 1 else 0  # one core: the extractor runs in this process
        deadline = time.monotonic() + 60
        while len(children(run.pid)) < expected and time.monotonic() < deadline:
            time.sleep(0.5)
        started = children(run.pid)
        assert len(started) == expected, log.read_text()[-2000:]
        assert partitions(settings, settings.topics.pages_raw) == max(1, cores)
        if cores > 1:
            assert f"{settings.topics.pages_raw}: partitions 1 -> {cores}" in log.read_text()
    finally:
        run.send_signal(signal.SIGTERM)
        code = run.wait(90)
    assert code == 0, log.read_text()[-2000:]
    assert not [pid for pid in started if Path(f"/proc/{pid}").exists()], "children outlived the parent"
