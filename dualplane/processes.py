"""``dualplane run``'s child processes, so one machine uses all its cores (one Python process uses one).

By default (no ``--processes``) the extractor, the stage that spends most of the CPU, runs in one
process per usable core (:func:`usable_cores`) and the other services named run in one process
beside them (:func:`per_core_commands`). ``--processes N`` instead runs the same services in N
child processes (:func:`child_commands`).

Child ``i`` serves its metrics on ``DUALPLANE_METRICS_PORT + i`` (each process has its own registry).
Fetchers and extractors simply run N times (tasks and ``pages.raw`` partitions are shared out by
the brokers). Frontier shards are divided among the children, so each shard has one process; run
the same command on another machine for standbys. The parent forwards SIGINT/SIGTERM and waits; a
child that dies on its own stops the others and the parent exits 1, so a supervisor restarts all.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from dualplane.supervision import die_with_parent

log = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = 2.0  # as dualplane.services (kept apart: the parent imports no service)
METRICS_PORT = "DUALPLANE_METRICS_PORT"
INSTANCE_ID_ENV = "DUALPLANE_EXTRACT_INSTANCE_ID"  # each extractor child needs its own


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under ``taskset`` or a container's
    cpuset), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_command(names: list[str], log_level: str, shards: list[int] | None = None) -> list[str]:
    """The command line of one child running ``names`` (frontiers of ``shards`` only, if given)."""
    shard_args = [arg for shard in shards or () for arg in ("--shard", str(shard))]
    return [sys.executable, "-m", "dualplane", "run", *names, "--log-level", log_level, "--processes", "1",
            *shard_args]  # fmt: skip


def per_core_commands(
    names: list[str], cores: int, log_level: str, shards: list[int] | None
) -> list[list[str]]:
    """``cores`` extractor children, and one child for the other services of ``names`` if any."""
    others = [name for name in names if name != "extractor"]
    commands = [run_command(others, log_level, shards)] if others else []
    return commands + [run_command(["extractor"], log_level)] * cores


def child_commands(
    names: list[str], processes: int, shards: list[int] | None, log_level: str
) -> list[list[str]]:
    """The command line of each child: the services, and for frontiers the shards it serves."""
    if "frontier" not in names or shards is None:
        return [run_command(names, log_level)] * processes
    commands = []
    for index in range(processes):
        mine = [shard for shard in shards if shard % processes == index]
        if mine:
            commands.append(run_command(names, log_level, mine))
        elif names != ["frontier"]:  # more processes than shards: the rest run the other services
            commands.append(run_command([n for n in names if n != "frontier"], log_level))
    return commands


def child_env(index: int) -> dict[str, str]:
    """Child ``index``'s environment: its own metrics port (``DUALPLANE_METRICS_PORT`` + ``index``)
    and, if set, its own extractor slot identity (``DUALPLANE_EXTRACT_INSTANCE_ID``-``index``)."""
    env = dict(os.environ)
    port = int(env.get(METRICS_PORT, "0") or 0)
    if port:
        env[METRICS_PORT] = str(port + index)
    instance = env.get(INSTANCE_ID_ENV)
    if instance:
        env[INSTANCE_ID_ENV] = f"{instance}-{index}"
    return env


def run_processes(
    names: list[str], processes: int, shards: list[int] | None, log_level: str, heartbeat: Path | None = None
) -> int:
    """``names`` in ``processes`` children (frontier shards divided among them): :func:`run_children`."""
    from dualplane.core.settings import Settings  # noqa: PLC0415 (the parent needs only the shard count)

    if "frontier" in names and shards is None:
        shards = list(range(Settings.from_env().queues.frontier_shards))
    return run_children(child_commands(names, processes, shards, log_level), heartbeat)


def run_children(commands: list[list[str]], heartbeat: Path | None = None) -> int:
    """Run the children until a signal (exit code 0) or until one dies on its own (1); while they all
    run, ``heartbeat`` (if given) is touched every ``HEARTBEAT_EVERY_S``."""
    # A parent killed with SIGKILL (by a supervisor, a test) must leave no services running alone.
    children = [
        subprocess.Popen(command, env=child_env(index), preexec_fn=die_with_parent())  # noqa: PLW1509
        for index, command in enumerate(commands)
    ]
    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while not stopping.is_set() and all(child.poll() is None for child in children):
        if heartbeat is not None:
            heartbeat.touch()
        stopping.wait(HEARTBEAT_EVERY_S)
    died = not stopping.is_set()
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(60)
        except subprocess.TimeoutExpired:
            child.kill()
    if died:
        logging.getLogger(__name__).error("a child process ended on its own; stopping the others, exit 1")
        return 1
    return 0
