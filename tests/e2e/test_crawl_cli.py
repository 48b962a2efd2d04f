"""``dualplane run frontier``, ``crawl --wait``, ``status`` and ``dlq`` end to end, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from dualplane import schemas
from dualplane.brokers import amqp
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import LimitSettings, Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.stack import LocalStack
from tests.support.brokers import BrokerSession
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.paths import REPO_ROOT
from tests.support.recording_server import RecordingHost

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ROOT = REPO_ROOT


@pytest.fixture
def private_settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(update={"limits": LimitSettings(domain_delay_ms=50)})


@pytest.fixture
def env(private_settings: Settings) -> dict[str, str]:
    return private_settings.to_env()


@pytest.fixture
def services(env: dict[str, str], tmp_path: Path) -> Iterator[None]:
    commands = [
        [sys.executable, "-m", "dualplane", "run", "frontier"],
        [sys.executable, "-m", "tests.support.fetch_worker"],
    ]
    processes = []
    for i, command in enumerate(commands):
        log = (tmp_path / f"service-{i}.log").open("wb")
        processes.append(
            subprocess.Popen(
                command, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
            )
        )
    yield
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        assert process.wait(30) == 0, (tmp_path / "service-0.log").read_text()[-2000:]


def test_crawl_wait_reports_the_finished_job(env: dict[str, str], services: None) -> None:
    with RecordingHost(latency_s=0.02) as host:
        seeds = [f"{host.base_url}/a", f"{host.base_url}/b", f"{host.base_url}/a#dup"]
        args = [arg for url in seeds for arg in ("--seed", url)]

        result = run_cli("crawl", *args, "--job", "e2e-job", "--wait", "--timeout", "90s", "--json", env=env)

        # The test's fetch worker writes no raw page and no fetch event: no page owes a record (as a
        # redirect or a 304 owes none), so the job is complete (test_honest_verdict has one that is not).
        assert result.exit_code == 0, result.stdout + result.stderr
        report = result.json()
        progress = report["progress"]
        assert progress["done"] == 2 and progress["duplicates"] == 1
        assert (report["finished"], report["complete"], report["records"]) == (True, True, 0)
        assert report["why"] == (
            "2 page(s) fetched, 0 record(s) committed, 0 failed, 0 dead-lettered; every fetched page has its "
            "record (2 without a body: redirects or unchanged pages)"
        )
        assert dict(host.requests) == {"/a": 1, "/b": 1}

    status = run_cli("status", "--job", "e2e-job", "--json", env=env)
    assert status.exit_code == 0
    assert status.json()["job"]["done"] == 2
    assert status.json()["jobs"][0]["job_id"] == "e2e-job"
    lanes = {q["name"]: q for q in status.json()["queues"]}
    assert any(name.endswith(".tasks.normal") for name in lanes)


def test_dlq_list_shows_the_reason_and_redrive_brings_it_back(
    private_settings: Settings, env: dict[str, str]
) -> None:
    connection = amqp.connect(private_settings.amqp)
    channel = confirmed_channel(connection)
    Topology(private_settings.queues).declare(channel)
    body = json.dumps({"kind": "discovered", "version": 9}).encode()
    publish(channel, private_settings.queues.discovery, "0", body)
    connection.close()

    with_consumer = subprocess.Popen(
        [sys.executable, "-m", "dualplane", "run", "frontier"], env={**os.environ, **env}, cwd=ROOT
    )
    try:
        listed = None
        for _ in range(40):
            listed = run_cli("dlq", "list", "--json", env=env)
            if listed.exit_code == 0 and listed.json():
                break
        assert listed is not None and listed.exit_code == 0
        letters = listed.json()
        assert len(letters) == 1
        assert letters[0]["reason"].startswith("unknown version 9 of 'discovered' messages")

        table = run_cli("dlq", "list", env=env)
        assert "unknown version 9" in table.stdout

        redriven = run_cli("dlq", "redrive", "--reason", "unknown version", "--json", env=env)
        assert redriven.json() == {"redriven": 1, "left": 0}
    finally:
        with_consumer.send_signal(signal.SIGTERM)
        with_consumer.wait(30)


def test_crawl_wait_rides_through_a_rabbitmq_and_a_kafka_restart(
    brokers: BrokerSession, private_settings: Settings, env: dict[str, str], services: None
) -> None:
    """A probe's finding: ``crawl --wait`` died with a traceback on every broker restart
    (``ConnectionWrongStateError``, ``NOT_LEADER_FOR_PARTITION``, ``NOT_COORDINATOR``)."""
    if brokers.backend != "local":
        pytest.fail(
            "restarting brokers needs the embedded stack: run with DUALPLANE_TEST_BACKEND=local",
            pytrace=False,
        )
    with RecordingHost(latency_s=1.5) as host:
        args = [arg for i in range(30) for arg in ("--seed", f"{host.base_url}/p/{i}")]
        crawl = subprocess.Popen(
            [sys.executable, "-m", "dualplane", "crawl", *args, "--job", "restarts", "--wait", "--json"],
            env={**os.environ, **env, "COLUMNS": "200"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            # Submitted first (a crawl that cannot reach RabbitMQ to submit fails, rightly, with exit 1).
            JobProbe(private_settings).wait_progress("restarts", timeout_s=60, seeded=30)
            stack = LocalStack(brokers.settings)
            stack.restart("rabbitmq")
            stack.restart("kafka")
            # Still following: it neither died on the restarts nor saw the job end before them.
            assert crawl.poll() is None, f"crawl --wait ended with rc {crawl.returncode} by the restarts"
            stdout, stderr = crawl.communicate(timeout=180)
        finally:
            if crawl.poll() is None:
                crawl.kill()
        # Finished; the test's fetch worker writes no raw page, so no page owes a record.
        assert crawl.returncode == 0, stderr
        assert "Traceback" not in stderr
        assert json.loads(stdout)["progress"]["done"] == 30
        assert sum(host.requests.values()) >= 30


def test_crawl_wait_fails_when_the_job_does_not_finish_in_time(env: dict[str, str]) -> None:
    """A probe's finding: ``crawl --wait`` returned rc 0 at its timeout. With no frontier running this
    job never finishes: the wait must end as a failure."""
    seed = ("--seed", "http://unfinished.example/")
    result = run_cli("crawl", *seed, "--job", "never", "--wait", "--timeout", "3s", env=env)
    assert result.exit_code == 1, result.stdout + result.stderr
    # What it still waits for follows in parentheses (no progress, or none read yet on a slow machine).
    assert "error: job never did not finish within 3 s (no progress" in result.stderr


def test_crawl_wait_never_exits_0_while_records_are_missing(
    private_settings: Settings, env: dict[str, str], services: None
) -> None:
    """#23.3: --wait judged by the frontier's idle at its timeout, so a job whose pages were fetched
    but not yet extracted exited 0. With a raw page the extractor has not committed, it must fail."""
    ensure_data_plane_topics(private_settings)
    producer = clients.producer(private_settings.kafka)
    page = raw_page(b"<p>not extracted</p>", "http://x.example/", fetched_at=datetime.now(UTC), job_id="x")
    producer.produce(private_settings.topics.pages_raw, schemas.encode("raw_page", page), b"k", partition=0)
    assert producer.flush(30) == 0
    with RecordingHost(latency_s=0.01) as host:
        result = run_cli("crawl", "--seed", f"{host.base_url}/a", "--job", "unextracted", "--wait",
                         "--timeout", "45s", "--json", env=env)  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert result.json()["progress"]["done"] == 1  # fetched: only the records are missing
    assert result.json()["finished"] is False
    assert "(the extractor has 1 raw page(s) to commit records for); it goes on" in result.stderr


def test_crawl_wait_ends_at_once_for_a_job_whose_seeds_are_all_turned_away(
    env: dict[str, str], services: None
) -> None:
    """#27 P4: a job that never runs a task (its seeds out of scope) waited out the whole timeout,
    then exited 0 as if it had crawled. It ends within seconds now, saying 0 pages and why."""
    seeds = ["--seed", "http://elsewhere.example/a", "--seed", "http://elsewhere.example/private/b"]
    started = time.monotonic()
    result = run_cli("crawl", *seeds, "--allow-domain", "only-this.example", "--job", "turned-away",
                     "--wait", "--timeout", "120s", "--json", env=env)  # fmt: skip
    took_s = time.monotonic() - started
    assert result.exit_code == 0, result.stdout + result.stderr
    assert took_s < 60, f"crawl --wait took {took_s:.0f} s for a job with nothing to fetch"
    report = result.json()
    assert (report["finished"], report["progress"]["done"], report["progress"]["out_of_scope"]) == (
        True,
        0,
        2,
    )
    assert report["why"] == "0 pages: the frontier turned every seed away (2 out of scope)"
    assert "job turned-away finished: 0 pages: the frontier turned every seed away" in result.stderr


@pytest.mark.parametrize(("option", "value"), [("--timeout", "-1"), ("--max-pages", "-5")])
def test_a_negative_timeout_or_page_limit_is_a_usage_error(option: str, value: str) -> None:
    result = run_cli("crawl", "--seed", "http://a.example/", option, value, "--wait", timeout_s=60)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert any(f"Invalid value for '{option}'" in line for line in result.stderr.splitlines())
    assert "submitted" not in result.stderr + result.stdout


def test_status_of_a_job_says_running_while_the_extractor_is_behind(
    private_settings: Settings, env: dict[str, str], services: None
) -> None:
    """A probe's finding: ``status --job`` said ``idle: true`` while the extractor still had the job's
    pages to read. The frontier's word is ``frontier_idle``; the job's state is the finish rule's."""
    with RecordingHost(latency_s=0.01) as host:
        crawl = run_cli(
            "crawl", "--seed", f"{host.base_url}/a", "--job", "behind", "--wait", "--json", env=env
        )
    # Finished: nothing on pages.raw yet (no fetcher writes it here), so no page owes a record yet.
    assert crawl.exit_code == 0, crawl.stderr

    ensure_data_plane_topics(private_settings)
    producer = clients.producer(private_settings.kafka)
    page = raw_page(
        b"<p>not extracted yet</p>", f"{host.base_url}/a", fetched_at=datetime.now(UTC), job_id="behind"
    )
    producer.produce(private_settings.topics.pages_raw, schemas.encode("raw_page", page), b"k", partition=0)
    assert producer.flush(30) == 0

    behind = run_cli("status", "--job", "behind", "--json", env=env)
    assert behind.exit_code == 0, behind.stderr
    job = behind.json()["job"]
    assert (job["state"], job["frontier_idle"], job["extractor_lag"], job["done"]) == ("running", True, 1, 1)
    assert "idle" not in job

    group = f"{private_settings.kafka.group_prefix}-extractor"  # as an extractor commits it
    consumer = clients.consumer(private_settings.kafka, group)
    try:
        consumer.commit(offsets=[TopicPartition(private_settings.topics.pages_raw, 0, 1)], asynchronous=False)
    finally:
        consumer.close()
    caught_up = run_cli("status", "--job", "behind", "--json", env=env)
    assert (caught_up.json()["job"]["state"], caught_up.json()["job"]["extractor_lag"]) == ("finished", 0)
