"""The long-running services ``dualplane run`` knows, each built from the settings.

A service is anything with ``run()`` (blocks until stopped), ``stop()`` (from any thread) and
``close()``. New services register here as they land.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from confluent_kafka import KafkaException
from pika.exceptions import AMQPConnectionError

from dualplane.brokers.amqp import metrics as amqp_metrics
from dualplane.brokers.amqp.retry_relay import RetryRelay
from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.connectors.sink import S3Sink
from dualplane.connectors.sink import metrics as sink_metrics
from dualplane.control_plane.fetcher import metrics as fetcher_metrics
from dualplane.control_plane.fetcher.profile_store import ProfileStoreError
from dualplane.control_plane.fetcher.runner import TaskRunner
from dualplane.control_plane.fetcher.worker import Fetcher
from dualplane.control_plane.frontier import Frontier
from dualplane.control_plane.frontier import metrics as frontier_metrics
from dualplane.control_plane.frontier.cancels import CancelledJobsView
from dualplane.core import metrics
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor import metrics as extractor_metrics
from dualplane.data_plane.extractor.service import Extractor
from dualplane.data_plane.throttle import metrics as throttle_metrics
from dualplane.data_plane.throttle.exceptions import ThrottleError
from dualplane.data_plane.throttle.view import ThrottleView
from dualplane.supervision import PidFence, StaleChild, die_with_parent

log = logging.getLogger(__name__)

# How often a running process touches its heartbeat file (``dualplane run --heartbeat-file``).
HEARTBEAT_EVERY_S = 2.0
FAUST_APP = "dualplane.data_plane.throttle.worker"
# A service started while a broker restarts (a deploy, a node replaced, the chaos test) waits this
# long for it before giving up with the broker's error: one startup read gives up after 15-30 s, and
# a Kafka restart on a busy 2-core machine took over 30 s. Retries back off from 1 s to 15 s.
STARTUP_WAIT_S = 180.0
STARTUP_RETRY_MAX_S = 15.0
# What a broker that is not answering yet raises while a service starts (anything else is a real
# error and ends the start at once).
Built = TypeVar("Built")
BROKER_NOT_READY = (KafkaException, AMQPConnectionError, ThrottleError, ProfileStoreError, TimeoutError)
# A Faust worker that ends this soon after its start, this many times in a row, is crash-looping.
QUICK_EXIT_S = 60.0
CRASH_LOOP_EXITS = 3


def restart_log_level(ran_s: float, quick_exits: int) -> tuple[int, int]:
    """The level to log a Faust worker's exit at, and the count of quick exits in a row so far.

    One exit, restarted, needs no person (a broker restart during the worker's first rebalance ends
    it with 1): a WARNING, so a recovery stays free of ERROR lines. A worker that keeps dying soon
    after its start is crash-looping, and that does need a person: ERROR."""
    quick_exits = quick_exits + 1 if ran_s < QUICK_EXIT_S else 0
    return (logging.ERROR if quick_exits >= CRASH_LOOP_EXITS else logging.WARNING), quick_exits


# Faust's --loglevel names for Python's levels.
FAUST_LEVELS = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error",
                logging.CRITICAL: "crit"}  # fmt: skip


class Service(Protocol):
    name: str

    def run(self) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


@dataclass
class ConsumerService:
    """A control-plane consumer plus the object that owns its state."""

    name: str
    run: Callable[[], None]
    stop: Callable[[], None]
    close: Callable[[], None]


def frontier_services(settings: Settings, shards: list[int] | None = None) -> list[Service]:
    """One frontier per shard served (all of ``DUALPLANE_QUEUE_FRONTIER_SHARDS`` by default), sharing
    one view of the throttle's limits; each is active or a standby, as the broker decides."""
    view = ThrottleView(settings)
    served = shards if shards is not None else list(range(settings.queues.frontier_shards))
    services: list[Service] = []
    for shard in served:
        frontier = Frontier.from_settings(settings, view, shard=shard)
        consumer = frontier.consumer()
        frontier_metrics.watch(frontier)
        services.append(ConsumerService(f"frontier-{shard}", consumer.run, consumer.stop, frontier.close))
    amqp_metrics.watch_queues(settings)
    return services


def fetcher_service(settings: Settings) -> Service:
    prepare_data_plane(settings)
    fetcher = Fetcher.from_settings(settings)
    runner = TaskRunner(settings, fetcher, ThrottleView(settings), cancels=CancelledJobsView(settings))
    consumer = runner.consumer()
    fetcher_metrics.watch(runner)

    def close() -> None:
        asyncio.run_coroutine_threadsafe(fetcher.aclose(), runner.loop).result(timeout=60)
        runner.close()

    return ConsumerService("fetcher", consumer.run, consumer.stop, close)


def retry_relay_service(settings: Settings) -> Service:
    """Runs beside every fetcher: hands the delay tiers' tasks back to their lanes when due."""
    relay = RetryRelay(settings)
    return ConsumerService("retry-relay", relay.run, relay.stop, lambda: None)


def extractor_service(settings: Settings) -> Service:
    extractor = Extractor(settings)
    extractor_metrics.watch(extractor)
    return ConsumerService("extractor", extractor.run, extractor.stop, extractor.close)


class ThrottleService:
    """The Faust block-ratio processor, as a child process: Faust wants a main thread of its own."""

    name = "throttle"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        snapshot = settings.throttle_snapshot_path
        if snapshot is not None:
            throttle_metrics.watch_snapshot(snapshot, settings.metrics.max_domains)

    def run(self) -> None:
        datadir = self.settings.stack.data_dir / "throttle" / "faust"
        datadir.parent.mkdir(parents=True, exist_ok=True)  # Faust makes only the last level itself
        app = ["-m", "faust", "-A", FAUST_APP, "--datadir", str(datadir)]
        # The worker command starts Faust's web server unless told not to, whatever the app says:
        # two processors on one machine would then fight over port 6066 and one would die.
        port = self.settings.throttle.web_port
        web = (
            ["--web-port", str(port), "--web-bind", self.settings.throttle.web_bind]
            if port
            else ["--without-web"]
        )
        # Faust logs at this process's level, to stderr: stdout is for results (`dualplane demo --json`
        # prints its report there). At WARNING and above (the demo's default) its start-up banner goes too.
        root_level = logging.getLogger().getEffectiveLevel()
        quiet = ["--quiet"] if root_level >= logging.WARNING else []
        level = FAUST_LEVELS.get(root_level, "info")
        command = [sys.executable, *app, *quiet, "worker", "--loglevel", level, *web]
        # A worker left by a dead parent would hold the data directory and the throttle's partitions,
        # and each new worker would crash against it: end it first (see dualplane.supervision).
        fence = PidFence(datadir.parent / "faust.pid", f"{FAUST_APP} --datadir {datadir}")
        quick_exits = 0
        while not self._stopping.is_set():
            try:
                fence.clear()
            except StaleChild as error:
                log.error("throttle processor not started: %s; trying again in 5 s", error)
                self._stopping.wait(5)
                continue
            env = {**os.environ, **self.settings.to_env()}
            # This thread lives until the worker has ended: Linux signals the worker when it exits.
            # Its preexec only makes one system call, looked up before the fork: safe with threads.
            self.process = subprocess.Popen(
                command,
                env=env,
                stdout=sys.stderr.fileno(),
                preexec_fn=die_with_parent(),  # noqa: PLW1509
            )
            fence.record(self.process.pid)
            started_s = time.monotonic()
            code = self.process.wait()
            if not self._stopping.is_set():
                log_level, quick_exits = restart_log_level(time.monotonic() - started_s, quick_exits)
                log.log(log_level, "throttle processor exited with %s; restarting in 5 s", code)
                self._stopping.wait(5)

    def stop(self) -> None:
        self._stopping.set()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def close(self) -> None:
        if self.process is not None:
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


def sink_service(settings: Settings) -> Service:
    sink = S3Sink.from_settings(settings)
    sink_metrics.watch(sink)
    return sink


REGISTRY: dict[str, Callable[[Settings], Service]] = {
    "fetcher": fetcher_service,
    "extractor": extractor_service,
    "throttle": ThrottleService,
    "s3-sink": sink_service,
}
SERVICE_NAMES = ("frontier", *REGISTRY)


def build(settings: Settings, name: str, shards: list[int] | None = None) -> list[Service]:
    """The service(s) ``dualplane run NAME`` runs: one per frontier shard served, the fetcher and its
    retry relay, else one."""
    if name == "frontier":
        return frontier_services(settings, shards)
    if name == "fetcher":  # every fetcher process relays retries: as many relays as fetchers
        return [fetcher_service(settings), retry_relay_service(settings)]
    return [REGISTRY[name](settings)]


class ServiceGroup:
    """Services on threads of this process, started together and stopped together: ``stop()`` each,
    join its thread (at most ``JOIN_S``), ``close()`` it. ``dualplane run``, the demo and the test
    harnesses run services through it; as a context manager it starts on entry and stops on exit."""

    JOIN_S = 30.0

    def __init__(self, services: list[Service]) -> None:
        self.services = services
        self.threads = [threading.Thread(target=s.run, name=s.name, daemon=True) for s in services]

    @classmethod
    def build(cls, settings: Settings, names: Iterable[str], shards: list[int] | None = None) -> ServiceGroup:
        """The services ``dualplane run NAMES…`` runs (see :func:`build`), not started yet."""
        return cls([service for name in names for service in build(settings, name, shards)])

    def start(self) -> ServiceGroup:
        for thread in self.threads:
            thread.start()
        return self

    def ended(self) -> list[str]:
        """The services whose ``run`` returned or raised (none while all run)."""
        return [s.name for t, s in zip(self.threads, self.services, strict=True) if not t.is_alive()]

    def stop(self) -> None:
        for service in self.services:
            service.stop()
        for thread, service in zip(self.threads, self.services, strict=True):
            thread.join(timeout=self.JOIN_S)
            service.close()

    def __enter__(self) -> ServiceGroup:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_when_brokers_answer(
    build: Callable[[], Built],
    what: str,
    stopping: threading.Event,
    wait_s: float = STARTUP_WAIT_S,
    first_retry_s: float = 1.0,
) -> Built | None:
    """``build()``, tried again while the brokers do not answer yet, for at most ``wait_s``; then the
    broker's own error (it says what to check). None when ``stopping`` is set while waiting."""
    deadline = time.monotonic() + wait_s
    retry_s = first_retry_s
    while True:
        try:
            return build()
        except BROKER_NOT_READY as error:
            if time.monotonic() + retry_s > deadline:
                raise
            log.warning("%s could not start yet (%s); trying again in %.0f s", what, error, retry_s)
        if stopping.wait(retry_s):
            return None
        retry_s = min(2 * retry_s, STARTUP_RETRY_MAX_S)


def run_services(
    settings: Settings, names: list[str], shards: list[int] | None = None, heartbeat: Path | None = None
) -> None:
    """Run the named services side by side until SIGINT or SIGTERM, then stop them cleanly.

    A service whose ``run`` returns or raises on its own stops all of them and the process exits
    with status 1 (after the traceback), so that its supervisor (compose ``restart:``, systemd,
    Kubernetes) restarts it: a process that stays up with a dead service would look healthy.
    While every service runs, ``heartbeat`` (if given) is touched every ``HEARTBEAT_EVERY_S``: a
    supervisor's healthcheck reads its age without starting a Python of ours.
    """
    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        log.info("received %s; stopping %s", signal.Signals(signum).name, ", ".join(names))
        stopping.set()

    # Before building: a signal while the services start (reading a changelog can take a while)
    # must still end in a clean stop and exit 0, not in Python's default death by signal.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    group = start_when_brokers_answer(
        lambda: ServiceGroup.build(settings, names, shards), ", ".join(names), stopping
    )
    if group is None:  # asked to stop while waiting for the brokers
        return
    metrics.serve(settings.metrics)
    group.start()
    beaten = 0.0
    while not stopping.is_set() and not group.ended():
        if heartbeat is not None and time.monotonic() - beaten >= HEARTBEAT_EVERY_S:
            heartbeat.touch()
            beaten = time.monotonic()
        stopping.wait(0.5)
    ended = group.ended()
    group.stop()
    if ended and not stopping.is_set():
        log.error("%s ended on its own; exiting with status 1 so that it is restarted", ", ".join(ended))
        raise SystemExit(1)
