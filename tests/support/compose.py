"""A compose project on a real Docker engine, for the compose tests: prepare, up, exec, inspect, down.

It drives only the command line (``scripts/compose-local.sh``, ``docker compose``, ``dualplane``
inside the containers) and reads the engine through the Docker SDK, so it depends on the compose
files and the CLI, not on the package's modules.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
PREPARE = ROOT / "scripts" / "compose-local.sh"
# The user-facing file, the registry-free override, and the sample site to crawl (docs/compose.md order).
COMPOSE_FILES = ("docker/compose.yaml", "docker/compose.local.yaml", "docker/compose.demo.yaml")
# docs/compose.md's commands, which the compose test runs as they are (with COMPOSE_FILE naming
# the three files); tests/docker/test_compose.py checks the page has them.
UP = "docker compose up -d --build --wait --scale fetcher=3"
CRAWL = (
    "docker compose exec frontier dualplane crawl --seed http://sample-site:8100/ "
    "--seed http://sample-site:8101/ --seed http://sample-site:8102/ --job compose-demo --wait --json"
)
EXPORT = "docker compose exec frontier dualplane records export --job compose-demo"
DOWN = "docker compose down -v"
README_COMMANDS = (f"export COMPOSE_FILE={':'.join(COMPOSE_FILES)}", "scripts/compose-local.sh prepare",
                   UP, CRAWL, EXPORT, DOWN)  # fmt: skip
UNAVAILABLE_EXIT = 3  # compose-local.sh: this machine cannot have an engine
REQUIRE_VARIABLE = "DUALPLANE_TEST_REQUIRE_DOCKER"  # CI: "not run" is a failure
# One compose test per machine at a time: two stacks at once on 2 cores time each other out.
LOCK_PATH = Path("/tmp/dualplane-compose-test.lock")
LOCK_WAIT_S = 1200
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"


class EngineUnavailable(Exception):
    """No Docker engine here and none can be started (not root, no apt-get); the message says why."""


def prepare_engine() -> float:
    """Run ``compose-local.sh prepare``; returns its duration in seconds."""
    started = time.monotonic()
    completed = subprocess.run(
        [str(PREPARE), "prepare"], capture_output=True, text=True, timeout=1800, check=False, cwd=ROOT
    )
    if completed.returncode == UNAVAILABLE_EXIT:
        raise EngineUnavailable(completed.stderr.strip().splitlines()[-1])
    if completed.returncode != 0:
        raise RuntimeError(f"{PREPARE.name} prepare failed:\n{completed.stderr[-4000:]}")
    return time.monotonic() - started


@contextmanager
def machine_lock() -> Iterator[None]:
    with LOCK_PATH.open("a") as handle:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another compose test held {LOCK_PATH} for {LOCK_WAIT_S} s") from None
                time.sleep(2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def host_network() -> dict[str, Any]:
    """What the stack must leave as it found it: forwarding, firewall rules and interfaces."""
    proc_net = Path("/proc/sys/net")
    state: dict[str, Any] = {
        name: (proc_net / name).read_text().strip()
        for name in ("ipv4/ip_forward", "ipv6/conf/all/forwarding")
        if (proc_net / name).exists()
    }
    for tool in ("iptables-save", "ip6tables-save"):
        # On a fresh machine the tools arrive with the engine (docker.io depends on iptables), after
        # the "before" reading: a host without them has no rules of theirs, so read that as none.
        rules = ""
        if shutil.which(tool):
            rules = subprocess.run([tool], capture_output=True, text=True, check=False).stdout
        state[tool] = [line for line in rules.splitlines() if not line.startswith("#")]
    state["interfaces"] = sorted(path.name for path in Path("/sys/class/net").iterdir())
    return state


@dataclass(frozen=True)
class ComposeProject:
    """One compose project: its own name, containers, volumes, network, and app image tag."""

    name: str
    files: tuple[str, ...] = COMPOSE_FILES
    variables: tuple[tuple[str, str], ...] = ()  # more environment for compose's own ${...}
    app_image: str = ""  # another project's app image, shared (the build is cached once made)

    @classmethod
    def for_this_checkout(cls, kind: str = "test", **fields: Any) -> ComposeProject:
        return cls(f"dualplane-{kind}-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:8]}", **fields)

    @property
    def image(self) -> str:
        # Per checkout: a stack built from another worktree's code never runs this one's tests.
        return self.app_image or f"{self.name}:dev"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "COMPOSE_FILE": ":".join(self.files),
            "COMPOSE_PROJECT_NAME": self.name,
            "DUALPLANE_IMAGE": self.image,
            **dict(self.variables),
        }

    def run(self, command: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        """One of docs/compose.md's command lines, as it is written there."""
        return subprocess.run(
            shlex.split(command), env=self.env(), cwd=ROOT, capture_output=True, text=True,
            timeout=timeout_s, check=False,
        )  # fmt: skip

    def popen(self, command: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            shlex.split(command), env=self.env(), cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def compose(self, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "compose", *args],
            env=self.env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def host_address(self, service: str, port: int) -> str:
        """``127.0.0.1:PORT`` where the host reaches ``service``'s ``port``."""
        completed = self.compose("port", service, str(port))
        assert completed.returncode == 0, completed.stderr
        return completed.stdout.strip()

    def filters(self, service: str | None = None) -> dict[str, list[str]]:
        labels = [f"{PROJECT_LABEL}={self.name}"]
        if service is not None:
            labels.append(f"{SERVICE_LABEL}={service}")
        return {"label": labels}
