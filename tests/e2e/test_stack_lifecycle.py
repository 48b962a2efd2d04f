"""``dualplane stack`` end to end: a second, private stack on free ports, up twice, used, and down.

"Used" is the whole demo on the brand-new stack: its round trip through every plane, its crawl, replay
and report. (The demo is run once in the suite, here: a second run on the session's stack checked
only the round trips, for 90 s of CI.)"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dualplane.stack.process import pid_alive
from tests.support.cli import CliResult, free_ports, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                environ = (proc / "environ").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if text in cmdline or text in environ:
                found.append(int(proc.name))
    return [pid for pid in found if pid_alive(pid)]


@pytest.fixture
def private_stack_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    kafka, controller, amqp, management, dist, s3 = free_ports(6)
    env = {
        "DUALPLANE_STACK_DATA_DIR": str(tmp_path / "stack"),
        "DUALPLANE_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{kafka}",
        "DUALPLANE_STACK_KAFKA_CONTROLLER_PORT": str(controller),
        "DUALPLANE_AMQP_URL": f"amqp://guest:guest@127.0.0.1:{amqp}/%2F",
        "DUALPLANE_AMQP_MANAGEMENT_URL": f"http://127.0.0.1:{management}",
        "DUALPLANE_STACK_RABBITMQ_DIST_PORT": str(dist),
        "DUALPLANE_S3_ENDPOINT_URL": f"http://127.0.0.1:{s3}",
        "DUALPLANE_STACK_KAFKA_HEAP_MB": "512",
    }
    try:
        yield env
    finally:
        run_cli("stack", "down", env=env)  # whatever the test did, leave nothing running


def _by_name(result: CliResult) -> dict[str, dict[str, object]]:
    return {service["name"]: service for service in result.json()["services"]}


# A brand-new broker creates __transaction_state (50 partitions) on the demo's first transaction: on a
# loaded 2-core machine that alone once kept the demo past 240 s ("Not coordinator: retrying").
@pytest.mark.timeout(720)
def test_up_twice_status_demo_and_down_leaves_nothing(
    private_stack_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = private_stack_env
    first = run_cli("stack", "up", "--json", env=env)
    assert first.exit_code == 0, first.stderr
    started = time.monotonic()
    second = run_cli("stack", "up", "--json", env=env)
    warm_up_s = time.monotonic() - started

    assert second.exit_code == 0, second.stderr
    # Reuse is proven by the pids below; the time only guards against a restart (a cold start is
    # minutes), so it allows a slow CLI start at CI load.
    assert warm_up_s < 90
    assert {n: s["pid"] for n, s in _by_name(second).items()} == {
        n: s["pid"] for n, s in _by_name(first).items()
    }, "the second `up` must reuse the running services"

    status = run_cli("stack", "status", "--json", env=env)
    services = _by_name(status)
    assert status.exit_code == 0 and status.json()["healthy"] is True
    assert set(services) == {"kafka", "rabbitmq", "s3"}
    assert all(s["healthy"] and s["ownership"] == "stack" for s in services.values())
    assert services["kafka"]["endpoint"] == env["DUALPLANE_KAFKA_BOOTSTRAP_SERVERS"]
    assert services["s3"]["endpoint"] == env["DUALPLANE_S3_ENDPOINT_URL"]

    demo = run_cli("demo", "--json", env=env, timeout_s=480)
    assert demo.exit_code == 0, demo.stdout + demo.stderr
    report = demo.json()
    assert report["ok"] is True
    assert [(step["plane"], step["ok"]) for step in report["round_trips"]] == [
        ("data (Kafka)", True),
        ("control (RabbitMQ)", True),
        ("objects (S3)", True),
    ]
    assert all("intact" in step["detail"] for step in report["round_trips"])
    crawl = demo.json()["crawl"]
    assert crawl["ok"] and crawl["records"] == crawl["reachable"] > 100
    assert crawl["throttled_and_recovered"], crawl["throttle"]  # the anti-bot host: halved, then recovered
    assert crawl["replay"]["records"] == crawl["records"] and crawl["replay"]["to_topic"].endswith(".v2")
    assert Path(crawl["report"]).is_file()
    look_further(crawl, env, tmp_path_factory.mktemp("report"))

    down = run_cli("stack", "down", "--json", env=env)
    assert down.exit_code == 0
    assert not any(s["healthy"] for s in _by_name(down).values())
    pids = [int(s["pid"]) for s in services.values()]  # type: ignore[call-overload]
    assert not [pid for pid in pids if pid_alive(pid)]
    assert _processes_mentioning(env["DUALPLANE_STACK_DATA_DIR"]) == []
    assert run_cli("stack", "status", "--json", env=env).exit_code == 1


def look_further(crawl: dict[str, Any], env: dict[str, str], out: Path) -> None:
    """The demo's "look further" lines name its namespace, and the commands answer with it: `report`
    said "nothing known about job" and `records` read the default topics without environment variables."""
    job = crawl["job_id"]
    assert all("--namespace demo" in line for line in crawl["commands"] if line.startswith("dualplane "))
    status = run_cli("status", "--namespace", "demo", "--job", job, "--json", env=env)
    assert status.exit_code == 0, status.stderr
    assert status.json()["job"]["state"] == "finished"
    records = run_cli("records", "export", "--namespace", "demo", "--job", job, env=env)
    assert records.exit_code == 0, records.stderr
    assert len(records.stdout.splitlines()) == crawl["records"]
    v2_topic = crawl["replay"]["to_topic"]
    v2 = run_cli("records", "export", "--namespace", "demo", "--topic", v2_topic, "--job", job, env=env)
    assert len(v2.stdout.splitlines()) == crawl["records"], v2.stderr
    page = run_cli("report", job, "--namespace", "demo", "-o", str(out), "--json", env=env)
    assert page.exit_code == 0, page.stderr
    assert page.json()["fetch_events"] >= crawl["done"]
    assert run_cli("report", job, "--out", str(out), env=env).exit_code == 1  # not in the default namespace
    every_line_then_crawl_monitor_dlq(crawl, env, out)


def every_line_then_crawl_monitor_dlq(crawl: dict[str, Any], env: dict[str, str], out: Path) -> None:
    """A new user runs every "look further" line as printed, then `crawl`, `monitor` and `dlq` in the
    demo's namespace, exporting no variable (``env`` names the stack only): each one answers (#37)."""
    assert "DUALPLANE_NAMESPACE" not in env
    lines = [line for line in crawl["commands"] if line.startswith("dualplane ")]
    assert len(lines) == 5, lines
    for line in lines:
        args = shlex.split(line)[1:]
        if args[:2] == ["records", "tail"]:  # it follows until stopped: read the job's records, then stop
            assert _tail_lines(args, env, cwd=out, wanted=crawl["records"]) == crawl["records"], line
            continue
        result = run_cli(*args, env=env, cwd=out)
        assert result.exit_code == 0, f"{line}: {result.stderr}"
    assert len((out / "records-v2.jsonl").read_text().splitlines()) == crawl["records"]
    seed = "http://127.0.0.1:9/"  # nothing runs the services now: the job and monitor wait, queued
    submitted = run_cli("crawl", "--namespace", "demo", "--seed", seed, "--json", env=env)
    assert submitted.exit_code == 0, submitted.stderr
    assert submitted.json()["seeds"] == 1
    monitor = run_cli("monitor", "create", "--namespace", "demo", "--seed", seed, "--json", env=env)
    assert monitor.exit_code == 0, monitor.stderr
    assert monitor.json()["seeds"] == 1
    letters = run_cli("dlq", "list", "--namespace", "demo", "--json", env=env)
    assert letters.exit_code == 0, letters.stderr
    assert isinstance(letters.json(), list)


def _tail_lines(
    args: list[str], env: dict[str, str], *, cwd: Path, wanted: int, timeout_s: float = 120
) -> int:
    """How many lines ``dualplane ARGS`` printed before ``wanted`` arrived (or ``timeout_s`` passed);
    then the command is stopped, as a user stops a tail with Ctrl-C."""
    command = [sys.executable, "-m", "dualplane", *args]
    with subprocess.Popen(
        command,
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as tail:
        assert tail.stdout is not None
        deadline, count = time.monotonic() + timeout_s, 0
        timer = threading.Timer(timeout_s, tail.terminate)  # a silent tail must not hang the test
        timer.start()
        try:
            for _ in tail.stdout:
                count += 1
                if count >= wanted or time.monotonic() > deadline:
                    break
        finally:
            timer.cancel()
            tail.terminate()
    return count
