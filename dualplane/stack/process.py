"""Detached child processes for the local stack: spawn, probe, wait for, and stop by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from dualplane.stack.exceptions import ServiceStartTimeout


def spawn_detached(command: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None) -> int:
    """Start ``command`` in its own session (it outlives the CLI) with output in ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    return process.pid


def pid_alive(pid: int | None) -> bool:
    """True when ``pid`` names a running process that is not a zombie."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    # A zombie still answers kill(0); /proc tells it apart ("Z" after the command name).
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z")


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22), or None.

    A pid alone is not an identity: after a reboot the number may belong to another program.
    The pair (pid, start ticks) is, so the stack never waits on or signals a stranger.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return int(fields[19])  # field 22 overall; the first two (pid, comm) precede the split


def same_process(pid: int, ticks: int | None) -> bool:
    """True when ``pid`` is alive and is still the process that started at ``ticks``."""
    return pid_alive(pid) and (ticks is None or start_ticks(pid) == ticks)


def terminate(pid: int, timeout_s: float = 20.0) -> None:
    """SIGTERM ``pid`` (and its process group), escalating to SIGKILL after ``timeout_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        _signal_group_or_pid(pid, sig)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            _reap(pid)
            if not pid_alive(pid):
                return
            time.sleep(0.1)


def wait_until(ready: Callable[[], bool], timeout_s: float, what: str, log_path: Path | None = None) -> float:
    """Poll ``ready`` until it is true; return the seconds it took or raise with the log's path."""
    started = time.monotonic()
    while not ready():
        if time.monotonic() - started > timeout_s:
            hint = f"; see {log_path}" if log_path else ""
            raise ServiceStartTimeout(f"{what} was not ready after {timeout_s:.0f} s{hint}")
        time.sleep(0.25)
    return time.monotonic() - started


def _signal_group_or_pid(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with suppress(ProcessLookupError):
            os.kill(pid, sig)


def _reap(pid: int) -> None:
    # Only our own children can be reaped; for anything else this is a harmless no-op.
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
