"""The compose stack on a real Docker engine: up healthy, a crawl through it, fetchers scaled and one
killed mid-crawl, state in the volumes, and ``down -v`` leaving nothing behind.

One session: the stack comes up once (module fixture) and the tests run in file order against it;
the last one takes it down. The commands are docs/compose.md's, with the three
compose files in ``COMPOSE_FILE``. Where no engine can be had the tests are skipped with the reason,
unless ``DUALPLANE_TEST_REQUIRE_DOCKER=1`` (CI), which makes that a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import docker
import httpx
import pytest

from tests.support.compose import (
    CRAWL,
    DOWN,
    EXPORT,
    REQUIRE_VARIABLE,
    UP,
    ComposeProject,
    EngineUnavailable,
    host_network,
    machine_lock,
    prepare_engine,
)

pytestmark = [pytest.mark.compose, pytest.mark.slow, pytest.mark.timeout(2400)]

FETCHERS = 3  # as in UP
APP_SERVICES = ("frontier", "fetcher", "extractor", "throttle")
ONE_SHOT = {"minio-init"}
# Kill a fetcher once the site has served this many pages, every fetcher among its clients.
KILL_AFTER_PAGES = 30


@pytest.fixture(scope="module")
def docker_client(project: ComposeProject) -> Any:
    return docker.from_env()


@pytest.fixture(scope="module")
def before() -> dict[str, Any]:
    """The host's network settings before anything here ran (the engine may start below)."""
    return host_network()


@pytest.fixture(scope="module")
def project(before: dict[str, Any]) -> Iterator[ComposeProject]:
    """The stack, up and healthy with three fetchers; taken down (again) at the end regardless."""
    with machine_lock():
        try:
            seconds = prepare_engine()
        except EngineUnavailable as error:
            if os.environ.get(REQUIRE_VARIABLE) == "1":
                pytest.fail(f"compose tests required ({REQUIRE_VARIABLE}=1) but {error}", pytrace=False)
            pytest.skip(f"not run: {error}")
        print(f"\ncompose-local.sh prepare: {seconds:.0f} s")
        stack = ComposeProject.for_this_checkout()
        stack.compose("down", "-v", "--remove-orphans")  # what an interrupted run left behind
        before["interfaces"] = host_network()["interfaces"]  # the engine's own bridge is expected
        started = time.monotonic()
        up = stack.run(UP, timeout_s=1800)
        print(f"{UP}: {time.monotonic() - started:.0f} s")
        try:
            assert up.returncode == 0, f"{up.stderr[-3000:]}\n{stack.compose('logs', '--tail', '30').stdout}"
            yield stack
        finally:
            stack.compose("down", "-v", "--remove-orphans")


def _containers(client: Any, stack: ComposeProject, service: str | None = None) -> list[Any]:
    found = client.containers.list(all=True, filters=stack.filters(service))
    return [c for c in found if c.labels.get("com.docker.compose.oneoff") != "True"]


def _address(container: Any) -> str:
    networks = container.attrs["NetworkSettings"]["Networks"]
    return str(next(iter(networks.values()))["IPAddress"])


def test_every_service_comes_up_healthy(project: ComposeProject, docker_client: Any) -> None:
    containers = _containers(docker_client, project)
    by_service = Counter(c.labels["com.docker.compose.service"] for c in containers)
    assert by_service["fetcher"] == FETCHERS
    assert set(APP_SERVICES) <= by_service.keys()
    for container in containers:
        state = container.attrs["State"]
        name = container.labels["com.docker.compose.service"]
        if name in ONE_SHOT:
            assert state["Status"] == "exited" and state["ExitCode"] == 0, name
        else:
            assert state["Status"] == "running" and state["Health"]["Status"] == "healthy", (name, state)


def test_a_crawl_spreads_over_the_fetchers_and_survives_one_killed(
    project: ComposeProject, docker_client: Any
) -> None:
    site = f"http://{project.host_address('sample-site', 8100)}"
    fetchers = {_address(c): c for c in _containers(docker_client, project, "fetcher")}
    crawl = project.popen(CRAWL)
    try:
        served = _wait_for_spread(site, set(fetchers), crawl)
        victim_address, held = _kill_a_busy_fetcher(project, fetchers)
        stdout, stderr = crawl.communicate(timeout=900)
    finally:
        crawl.kill()
    assert crawl.returncode == 0, stderr[-3000:]
    summary = json.loads(stdout)
    progress = summary["progress"]
    victim = fetchers[victim_address]
    victim.reload()  # `restart: unless-stopped` brings a killed container back
    print(f"\nrequests per fetcher before the kill: {dict(served)}; killed {victim_address} holding {held}")
    print(f"the killed fetcher now: {victim.status}, restarted {victim.attrs['RestartCount']} time(s)")
    print(f"job: {progress}")
    assert summary["finished"] and progress["dead_lettered"] == 0, summary["why"]

    truth = httpx.get(f"{site}/_truth", timeout=30).json()
    expected = {item["url"] for kind in ("products", "articles") for item in truth[kind]}
    recorded = _recorded_urls(project)
    assert expected and not expected - recorded, f"no record for {sorted(expected - recorded)[:5]}"


def test_the_services_keep_their_state_in_their_volumes(project: ComposeProject, docker_client: Any) -> None:
    for service in ("frontier", "throttle", "kafka", "rabbitmq"):
        container = _containers(docker_client, project, service)[0]
        volumes = [m for m in container.attrs["Mounts"] if m["Type"] == "volume"]
        assert volumes, f"{service} mounts no volume"
        data_dirs = [
            value for var, _, value in (e.partition("=") for e in container.attrs["Config"]["Env"])
            if var.startswith("DUALPLANE_") and var.endswith("_DATA_DIR")
        ]  # fmt: skip
        for path in data_dirs:
            assert any(path.startswith(m["Destination"]) for m in volumes), (
                f"{service}: {path} not in a volume"
            )
        for mount in volumes:
            files = docker_client.containers.run(
                project.image, ["find", "/volume", "-type", "f"], entrypoint=[], remove=True,
                volumes={mount["Name"]: {"bind": "/volume", "mode": "ro"}}, user="root",
            ).decode()  # fmt: skip
            assert files.strip(), f"{service} wrote nothing into its volume {mount['Name']}"


def test_down_leaves_nothing_running_and_the_host_network_as_it_was(
    project: ComposeProject, docker_client: Any, before: dict[str, Any]
) -> None:
    down = project.run(DOWN)
    assert down.returncode == 0, down.stderr
    filters = project.filters()
    assert docker_client.containers.list(all=True, filters=filters) == []
    assert docker_client.volumes.list(filters=filters) == []
    assert docker_client.networks.list(filters=filters) == []
    assert host_network() == before


def _wait_for_spread(site: str, fetchers: set[str], crawl: subprocess.Popen[str]) -> Counter[str]:
    """Page requests per client once every fetcher has made some and enough pages were served."""
    deadline, served = time.monotonic() + 300, Counter[str]()
    while time.monotonic() < deadline:
        assert crawl.poll() is None, f"the crawl ended before the fetchers were seen: {crawl.communicate()}"
        entries = httpx.get(f"{site}/_log", timeout=10).json()["entries"]
        served = Counter(entry["client"] for entry in entries)
        if set(served) >= fetchers and sum(served.values()) >= KILL_AFTER_PAGES:
            assert set(served) == fetchers, f"requests from outside the fetchers: {served}"
            return served
        time.sleep(0.5)
    raise AssertionError(f"not every fetcher fetched within 300 s: {served} (fetchers {sorted(fetchers)})")


def _kill_a_busy_fetcher(project: ComposeProject, fetchers: dict[str, Any]) -> tuple[str, int]:
    """SIGKILL a fetcher while it holds unacknowledged tasks; returns its address and how many."""
    management = f"http://{project.host_address('rabbitmq', 15672)}/api/channels"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        channels = httpx.get(management, auth=("guest", "guest"), timeout=10).json()
        held = Counter[str]()
        for channel in channels:
            peer = channel.get("connection_details", {}).get("peer_host", "")
            held[peer] += int(channel.get("messages_unacknowledged", 0))
        busy = [address for address in fetchers if held[address] > 0]
        if busy:
            victim = max(busy, key=lambda address: held[address])
            fetchers[victim].kill()
            return victim, held[victim]
        time.sleep(0.2)
    raise AssertionError("no fetcher held an unacknowledged task in 120 s")


def _recorded_urls(project: ComposeProject) -> set[str]:
    exported = project.run(EXPORT, timeout_s=300)
    assert exported.returncode == 0, exported.stderr
    return {json.loads(line)["url"] for line in exported.stdout.splitlines() if line.strip()}
