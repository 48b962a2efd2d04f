"""``dualplane status`` after many finished jobs: every job listed as finished, no queue left per job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.management import queue_stats
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.amqp.publisher import confirmed_channel
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.submit import submit_job
from dualplane.core.settings import LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from tests.support.cli import CliResult, interruptible, run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.paths import REPO_ROOT
from tests.support.recording_server import RecordingHost

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
JOBS = 50


@pytest.fixture
def private_settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(update={"limits": LimitSettings(domain_delay_ms=0)})


@pytest.fixture
def env(private_settings: Settings, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The test's settings, with a frontier and a fetch worker running on them."""
    env = private_settings.to_env()
    commands = [
        [sys.executable, "-m", "dualplane", "run", "frontier"],
        [sys.executable, "-m", "tests.support.fetch_worker"],
    ]
    processes = []
    for i, command in enumerate(commands):
        log = (tmp_path / f"service-{i}.log").open("wb")
        processes.append(
            subprocess.Popen(
                command, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT
            )
        )
    yield env
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        assert process.wait(30) == 0, (tmp_path / "service-0.log").read_text()[-2000:]


def submit_jobs(settings: Settings, base_url: str) -> list[str]:
    """``JOBS`` one-page jobs, each seeded with a page of its own."""
    job_ids = [f"many-{i:02d}" for i in range(JOBS)]
    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        topology = Topology.declared(settings.queues, channel)
        for i, job_id in enumerate(job_ids):
            spec = JobSpec(job_id=job_id, allowed_domains=(domain_of(base_url),))
            submit_job(channel, topology, spec, [f"{base_url}/page-{i}"])
    finally:
        connection.close()
    return job_ids


def wait_all_finished(env: dict[str, str], count: int, timeout_s: float = 120) -> CliResult:
    deadline = time.monotonic() + timeout_s
    while True:
        status = run_cli("status", "--jobs", str(count + 10), "--json", env=env)
        assert status.exit_code == 0, status.stderr
        states = [job["state"] for job in status.json()["jobs"]]
        if states.count("finished") == count or time.monotonic() > deadline:
            return status
        time.sleep(1)


def test_status_after_50_finished_jobs_lists_them_finished_and_no_queue_per_job(
    private_settings: Settings, env: dict[str, str]
) -> None:
    with RecordingHost(latency_s=0.0) as host:
        job_ids = submit_jobs(private_settings, host.base_url)
        view = wait_all_finished(env, JOBS).json()

        assert len(host.requests) == JOBS
    jobs = {job["job_id"]: job for job in view["jobs"]}
    assert sorted(jobs) == job_ids
    assert {(job["state"], job["done"], job["queued"], job["eta_s"]) for job in jobs.values()} == {
        ("finished", 1, 0, 0.0)
    }
    assert {job["why"] for job in jobs.values()} == {
        "1 page(s) fetched, 0 failed, 0 dead-lettered; every record committed"
    }
    # Each data-plane stage's lag: the extractor's and the throttle's group, and the sink's per stream.
    stages = {(row["consumer"], row["topic"]) for row in view["lag"]}
    topics = private_settings.topics
    assert {("extractor", topics.pages_raw), ("throttle", topics.fetch_events)} <= stages
    assert any(consumer == "s3-sink" for consumer, _ in stages)
    # RabbitMQ holds the control queues and the host's permit queue, nothing per job.
    topology = Topology(private_settings.queues)
    prefix = private_settings.queues.crawl_tasks.split(".")[0]
    names = {queue.name for queue in queue_stats(private_settings.amqp, prefix)}
    permits = {name for name in names if name.startswith(private_settings.queues.permits_prefix + ".")}
    assert names - permits <= set(topology.control_queues()), names
    assert len(permits) == 1 and not [name for name in names if "many-" in name]
    assert {queue["name"] for queue in view["queues"]} == names - permits
    assert view["permit_queues"] == 1 and view["errors"] == {}

    table = run_cli("status", env=env)
    assert table.exit_code == 0 and "many-" in table.stdout and "finished" in table.stdout


def test_status_watch_redraws_until_ctrl_c(private_settings: Settings, tmp_path: Path) -> None:
    """Into a file, each redraw is appended (a live view wrote nothing there until Ctrl-C, and this
    test waited out its whole minute before seeing the one view written at exit)."""
    output = tmp_path / "watch.out"
    command = interruptible([sys.executable, "-m", "dualplane", "status", "--watch", "--interval", "0.5s"])
    env = {**os.environ, **private_settings.to_env(), "COLUMNS": "200"}
    with output.open("wb") as out:
        watching = subprocess.Popen(command, env=env, stdout=out, cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 60
        while output.read_text().count("consumer lag") < 3 and time.monotonic() < deadline:
            assert watching.poll() is None, "status --watch ended by itself"
            time.sleep(0.2)
        assert watching.poll() is None, "status --watch ended by itself"
        watching.send_signal(signal.SIGINT)
        assert watching.wait(15) == 0
    finally:
        if watching.poll() is None:
            watching.kill()
    assert output.read_text().count("consumer lag") >= 3, output.read_text()[-2000:]
