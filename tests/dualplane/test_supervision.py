"""No process of the platform outlives its parent: each kind of parent is killed with SIGKILL (a
``dualplane run`` hosting the Faust throttle worker, a ``dualplane run --processes N`` parent), and
every process it started must be gone soon after. A worker left running by a dead parent anyway (an
older release) is ended before the next one starts, so a restarted service never fights a stale one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dualplane.core.settings import Settings
from dualplane.services import FAUST_APP
from dualplane.supervision import PidFence, StaleChild, alive, command_line
from tests.support.factories import ControlPlaneFactory
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e]

GONE_WITHIN_S = 45.0  # a child told to stop drains first (a fetcher: up to its drain timeout, 20 s)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found.extend(children)
        todo.extend(children)
    return found


def wait_until(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


class Tree:
    """``dualplane run`` processes of the test, and the processes found below them: those are
    killed at the end whatever happened (an orphan must not outlive the test either)."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.found: list[int] = []

    def below(self, run: subprocess.Popen[bytes], marker: str, count: int) -> list[int]:
        """The ``count`` processes below ``run`` whose command line holds ``marker``, once started."""
        found: list[int] = []

        def started() -> bool:
            found[:] = [pid for pid in descendants(run.pid) if marker in command_line(pid)]
            return len(found) >= count

        assert wait_until(started, 90), f"no {count} x {marker!r} below {run.pid}:\n{self.pipeline.logs()}"
        self.found.extend(found)
        return found

    def close(self) -> None:
        self.pipeline.stop_all()
        for pid in self.found:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def tree(control_plane: ControlPlaneFactory, tmp_path: Path) -> Iterator[Tree]:
    settings: Settings = control_plane.settings()
    # The throttle keeps its Faust data under the stack's data directory: one of the test's own.
    stack = settings.stack.model_copy(update={"data_dir": tmp_path / "stack"})
    made = Tree(Pipeline(settings.model_copy(update={"stack": stack}), tmp_path))
    yield made
    made.close()


def test_a_run_killed_with_sigkill_takes_its_faust_worker_with_it(tree: Tree) -> None:
    run = tree.pipeline.start("throttle")
    (faust,) = tree.below(run, FAUST_APP, 1)

    tree.pipeline.kill(run)

    assert wait_until(lambda: not alive(faust), GONE_WITHIN_S), (
        f"the Faust worker (pid {faust}) outlived its parent: {command_line(faust)}"
    )


def test_a_parent_killed_with_sigkill_takes_every_child_with_it(tree: Tree) -> None:
    run = tree.pipeline.start("fetcher", "--processes", "2")
    children = tree.below(run, "dualplane run fetcher", 2)

    tree.pipeline.kill(run)

    assert wait_until(lambda: not any(alive(pid) for pid in children), GONE_WITHIN_S), (
        f"children {[pid for pid in children if alive(pid)]} outlived their parent"
    )


def _sleeper(marker: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker])


@pytest.mark.unit
def test_a_worker_whose_parent_died_is_ended_before_the_next_one_starts(tmp_path: Path) -> None:
    fence = PidFence(tmp_path / "worker.pid", "the-worker --datadir d")
    stale = _sleeper("the-worker --datadir d")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "worker.pid").write_text(f"{stale.pid} {gone.pid}\n")  # its parent is dead
    try:
        assert fence.clear()
        assert stale.wait(15) is not None
    finally:
        stale.kill()


@pytest.mark.unit
def test_a_reused_pid_or_a_live_service_s_worker_is_left_alone(tmp_path: Path) -> None:
    fence = PidFence(tmp_path / "worker.pid", "the-worker --datadir d")
    other = _sleeper("something else")
    spawn = "[sys.executable, '-c', 'import time; time.sleep(120)', 'the-worker --datadir d']"  # its worker
    code = f"import subprocess, sys, time\np = subprocess.Popen({spawn})\n"
    code += "print(p.pid, flush=True)\ntime.sleep(60)"
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert owner.stdout is not None
        live_worker = int(owner.stdout.readline())
        assert wait_until(lambda: "the-worker" in command_line(live_worker), 10)  # exec'd
        (tmp_path / "worker.pid").write_text(f"{other.pid} 1\n")
        assert not fence.clear() and other.poll() is None  # the pid now runs something else
        (tmp_path / "worker.pid").write_text(f"{live_worker} {owner.pid}\n")
        with pytest.raises(StaleChild, match="give each its own DUALPLANE_STACK_DATA_DIR"):
            fence.clear()
        assert alive(live_worker)
    finally:
        for process in (other, owner):
            process.kill()
            process.wait()
        if alive(live_worker):
            os.kill(live_worker, signal.SIGKILL)
