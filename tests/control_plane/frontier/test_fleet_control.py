"""The control plane as a fleet: crashes, broker restarts, and politeness across processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.stack import LocalStack
from tests.support.brokers import BrokerSession
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier
from tests.support.paths import REPO_ROOT
from tests.support.recording_server import RecordingHost

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = REPO_ROOT


class Fleet:
    """Fetcher processes (the real TaskRunner) for one test; all are killed at the end."""

    def __init__(self, settings: Settings, tmp_path: Path) -> None:
        self.settings = settings
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen[bytes]] = []

    def spawn(self) -> subprocess.Popen[bytes]:
        log = (self.tmp_path / f"fetcher-{len(self.processes)}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fetch_worker"],
            env={**os.environ, **self.settings.to_env()},
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def fleet_settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=0, fetch_concurrency=8),
            "fetch": FetchSettings(delay_jitter=0, permit_wait_s=0.5),
        }
    )


@pytest.fixture
def frontier(fleet_settings: Settings) -> Iterator[RunningFrontier]:
    running = RunningFrontier(fleet_settings).start()
    yield running
    running.stop()


@pytest.fixture
def fleet(fleet_settings: Settings, tmp_path: Path) -> Iterator[Fleet]:
    fleet = Fleet(fleet_settings, tmp_path)
    yield fleet
    fleet.close()


def test_two_fetchers_never_exceed_p_d_per_host(frontier: RunningFrontier, fleet: Fleet) -> None:
    with RecordingHost(latency_s=0.15) as first, RecordingHost(latency_s=0.15) as second:
        seeds = [f"{host.base_url}/page/{i}" for host in (first, second) for i in range(20)]
        fleet.spawn()
        fleet.spawn()

        frontier.submit(JobSpec(job_id="polite"), seeds)

        frontier.wait_progress("polite", timeout_s=120, done=40, in_flight=0, queued=0)
        assert (first.max_concurrent, second.max_concurrent) == (2, 2)
        assert set(first.requests.values()) == {1} and len(first.requests) == 20


def test_fetcher_killed_mid_task_loses_nothing(frontier: RunningFrontier, fleet: Fleet) -> None:
    with RecordingHost(latency_s=4.0) as host:
        doomed = fleet.spawn()
        frontier.submit(JobSpec(job_id="crash"), [f"{host.base_url}/slow"])
        frontier.wait_progress("crash", timeout_s=60, in_flight=1)
        assert host.requests["/slow"] == 1

        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait(10)
        fleet.spawn()

        frontier.wait_progress("crash", timeout_s=60, done=1, in_flight=0, failed=0, dead_lettered=0)
        assert host.requests["/slow"] == 2  # the redelivered task ran again, to completion


def test_tasks_survive_a_rabbitmq_restart_and_services_reconnect(
    brokers: BrokerSession, frontier: RunningFrontier, fleet: Fleet
) -> None:
    if brokers.backend != "local":
        pytest.fail(
            "restarting RabbitMQ needs the embedded stack: run with DUALPLANE_TEST_BACKEND=local",
            pytrace=False,
        )
    with RecordingHost(latency_s=0.05) as host:
        frontier.submit(JobSpec(job_id="restart"), [f"{host.base_url}/p/{i}" for i in range(5)])
        frontier.wait_progress("restart", queued=5)

        LocalStack(brokers.settings).restart("rabbitmq")

        assert frontier.lane_depth() == 5
        frontier.submit(JobSpec(job_id="restart"), [f"{host.base_url}/p/after"])
        frontier.wait_progress("restart", timeout_s=60, queued=6)  # the frontier reconnected by itself
        fleet.spawn()
        frontier.wait_progress("restart", timeout_s=90, done=6, in_flight=0)
