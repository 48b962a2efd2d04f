"""Child processes that never outlive their parent, and a stale one fenced out before a restart.

Every process the platform starts (``dualplane run``'s children, the Faust throttle worker) is
started with :func:`die_with_parent` as its ``preexec_fn``: Linux sends it SIGTERM when the parent
dies, even by SIGKILL, so no service runs on with nobody to stop or restart it. An orphaned Faust
worker held the throttle's Kafka partitions and its data directory, and the fleet's new worker
crash-looped against it.

:class:`PidFence` is the second line, for a child that escaped anyway (started by an older
release, or on a platform without ``PR_SET_PDEATHSIG``): the pid of each child is kept in a file,
and before starting the next one the service ends a recorded child whose parent is gone.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # prctl(2)
FENCE_WAIT_S = 10.0  # a stale child asked to stop (SIGTERM) gets this long before SIGKILL


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: in the child, before it runs, ask Linux for SIGTERM
    when the parent dies. Linux ties the signal to the thread that forked, so call ``Popen`` from a
    thread that lives as long as the child should (the parent's main thread, or the service's own)."""
    parent = os.getpid()
    # Looked up here, in the parent: loading a library between fork and exec could deadlock on a
    # loader lock another thread held at the fork. The child only makes the call.
    prctl = ctypes.CDLL(None).prctl if sys.platform == "linux" else None

    def preexec() -> None:
        if prctl is None:
            return
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class PidFence:
    """One child at a time per ``path``: :meth:`record` the child started, :meth:`clear` a stale one.

    ``marker`` is a piece of the child's command line that names what it serves (the module and its
    data directory), so a reused pid is never taken for the child.
    """

    def __init__(self, path: Path, marker: str) -> None:
        self.path = path
        self.marker = marker

    def record(self, pid: int) -> None:
        self.path.write_text(f"{pid} {os.getpid()}\n")

    def clear(self) -> bool:
        """End the recorded child if it still runs while its parent is gone; True if one was ended.

        A child whose recorded parent still runs it belongs to a live service (two services given
        one data directory): it is left alone, and :class:`StaleChild` says what to change."""
        recorded = self._recorded()
        if recorded is None:
            return False
        child, owner = recorded
        if not alive(child) or self.marker not in command_line(child):
            return False
        if owner != os.getpid() and alive(owner) and parent_of(child) == owner:
            raise StaleChild(
                f"pid {child} ({self.marker}) is run by live process {owner}: two services share "
                f"{self.path.parent}; give each its own DUALPLANE_STACK_DATA_DIR"
            )
        log.warning("ending pid %s (%s), left running by a dead parent (pid %s)", child, self.marker, owner)
        _end(child)
        return True

    def _recorded(self) -> tuple[int, int] | None:
        try:
            child, owner = (int(part) for part in self.path.read_text().split())
        except (OSError, ValueError):
            return None
        return child, owner


class StaleChild(RuntimeError):
    """A recorded child runs under a live parent of its own: not ours to end."""


def _end(pid: int) -> None:
    """SIGTERM, then SIGKILL after ``FENCE_WAIT_S`` if still running."""
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + FENCE_WAIT_S
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
