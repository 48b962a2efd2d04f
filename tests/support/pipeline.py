"""The crawl pipeline as real processes (``dualplane run SERVICE``) for end-to-end tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupState

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.core.settings import Settings
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


# A log record at WARNING or above, or the last line of a traceback (the exception and its message).
_TROUBLE = re.compile(r" (WARNING|ERROR|CRITICAL) |^[\w.]+(Error|Exception|Wedged): ")


class Pipeline:
    """Starts services with the test's settings, kills them on request, stops them all at the end."""

    def __init__(self, settings: Settings, tmp_path: Path) -> None:
        self.settings = settings
        self.tmp_path = tmp_path
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(
        self, service: str, *args: str, env: dict[str, str] | None = None, log_level: str = "info"
    ) -> subprocess.Popen[bytes]:
        """``dualplane run SERVICE ARGS…`` with the test's settings (and ``env`` on top)."""
        log = (self.tmp_path / f"{service}-{len(self.processes)}.log").open("wb")
        # One process a service, so that killing it kills the service (by default `run extractor`
        # starts one extractor process per core).
        processes = () if "--processes" in args else ("--processes", "1")
        process = subprocess.Popen(
            [sys.executable, "-m", "dualplane", "run", service, *args, *processes, "--log-level", log_level],
            env={**os.environ, **self.settings.to_env(), **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        self.processes.append((service, process))
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.tmp_path.glob("*.log"))
        )

    def lines(self, containing: str) -> list[str]:
        """Every log line of every service that contains ``containing`` (whole logs, not their tails)."""
        return [
            line
            for path in sorted(self.tmp_path.glob("*.log"))
            for line in path.read_text(errors="replace").splitlines()
            if containing in line
        ]

    def trouble(self, first: int = 3) -> str:
        """Per service log: how many WARNING/ERROR lines and exceptions, and the first few."""
        summary = []
        for path in sorted(self.tmp_path.glob("*.log")):
            lines = [line for line in path.read_text().splitlines() if _TROUBLE.search(line)]
            summary.append(f"{path.stem}: {len(lines)} warnings/errors")
            summary.extend(f"    {line[:200]}" for line in lines[:first])
        return "\n".join(summary)

    def stop_all(self) -> None:
        for _name, process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _name, process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def read_topic(settings: Settings, topic: str) -> list[dict[str, Any]]:
    """Every record of ``topic`` from the beginning to its current end, decoded."""
    return [schemas.decode(message.value() or b"").record for message in read_to_end(settings.kafka, topic)]


def wait_stable(settings: Settings, group: str, timeout_s: float = 90) -> None:
    """Wait until the consumer group ``group`` is stable (its members joined and own partitions)."""
    admin = clients.admin(settings.kafka)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        (future,) = admin.describe_consumer_groups([group], request_timeout=5).values()
        if future.result().state == ConsumerGroupState.STABLE:
            return
        time.sleep(0.5)
    raise AssertionError(f"the consumer group {group} did not become stable in {timeout_s:.0f} s")
