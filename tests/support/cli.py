"""Run the real ``dualplane`` command in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout_s: float = 240, cwd: Path | None = None
) -> CliResult:
    completed = subprocess.run(
        [sys.executable, "-m", "dualplane", *args],
        cwd=cwd,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


# Restores Ctrl-C's default before exec'ing the command: a shell that starts pytest in the
# background (`cmd &` without job control) makes every child ignore SIGINT, and Python then
# never raises KeyboardInterrupt, so tests of Ctrl-C handling would fail for the harness's sake.
_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def interruptible(command: list[str]) -> list[str]:
    """``command`` (an executable path first) run so that SIGINT reaches it as Ctrl-C would."""
    return [sys.executable, "-c", _WITH_DEFAULT_SIGINT, *command]


def free_ports(count: int) -> list[int]:
    """Distinct ports free right now on loopback (bound together so none repeats)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
