"""The throttle processor as a real Faust worker: reaction time, compacted state, recovery, SIGKILL.

Each test runs ``python -m faust -A data_plane.throttle.worker`` with small windows and private
topic, exchange and consumer-group names, produces synthetic fetch events for one domain and listens
on the throttle fanout through its own exclusive queue.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import TopicPartition

from dualplane.brokers import amqp
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.limits import Limits
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle.commands import ThrottleCommand
from dualplane.data_plane.throttle.snapshot import read_snapshot
from dualplane.data_plane.throttle.view import ThrottleView, load_latest_state
from dualplane.status import credits_today
from tests.support.factories import ControlPlaneFactory, closing
from tests.support.fetch_events import synthetic_fetch_event
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = REPO_ROOT
BASE_ENV = {
    "DUALPLANE_THROTTLE_THRESHOLD": "0.05",
    "DUALPLANE_THROTTLE_MIN_SAMPLES": "20",
    # One layer: these check the processor's durable windows and counts; the fast layer (its own
    # 1 s buckets, the same code) runs at the defaults in tests/e2e/test_anti_bot_loop.py.
    "DUALPLANE_THROTTLE_FAST_WINDOW_S": "0",
    "DUALPLANE_THROTTLE_CEILING": "8",
    "DUALPLANE_THROTTLE_BASE_DELAY_MS": "500",
    "DUALPLANE_THROTTLE_COOLDOWN_BASE_MS": "1000",
    "DUALPLANE_THROTTLE_COOLDOWN_CAP_MS": "8000",
    "DUALPLANE_THROTTLE_PAUSE_RATIO": "0.9",  # 30% blocked must back off, not pause
    "DUALPLANE_THROTTLE_OFFSET_RESET": "earliest",
    "DUALPLANE_THROTTLE_SNAPSHOT_INTERVAL_S": "0.5",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fetch_event(domain: str, outcome: str, *, retry_after_s: float | None = None) -> bytes:
    return synthetic_fetch_event(domain, outcome, fetched_at=datetime.now(UTC), retry_after_s=retry_after_s)


@dataclass
class Worker:
    """One Faust worker process of the processor, restartable with the same identity and data dir."""

    settings: Settings
    env: dict[str, str]
    tmp_path: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.tmp_path / f"worker-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        env = {
            **os.environ,
            **self.settings.to_env(),
            **self.env,
            "DUALPLANE_THROTTLE_WEB_PORT": str(self.port),
        }
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "faust",
                    "-A",
                    "dualplane.data_plane.throttle.worker",
                    "--datadir",
                    str(self.tmp_path / "faust-data"),
                    "worker",
                    "--loglevel",
                    "info",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def logs(self) -> str:
        return "\n".join(
            (self.tmp_path / f"worker-{n}.log").read_text()[-3000:] for n in range(1, self.starts + 1)
        )

    def require_running(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            pytest.fail(f"the throttle worker exited:\n{self.logs()}")

    def domain(self, domain: str) -> dict[str, Any] | None:
        try:
            response = httpx.get(f"{self.base_url}/throttle/{domain}/", timeout=2)
            return dict(response.json()) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    def wait_for(self, what: str, check: Callable[[], bool], timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            self.require_running()
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}:\n{self.logs()}")
            time.sleep(0.2)


class Listener:
    """An exclusive queue on the throttle fanout; records each command with its arrival time."""

    def __init__(self, settings: Settings) -> None:
        self.connection = amqp.connect(settings.amqp)
        self.channel = self.connection.channel()
        exchange = settings.queues.throttle_exchange
        self.channel.exchange_declare(exchange, "fanout", durable=True)
        self.queue = self.channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
        self.channel.queue_bind(self.queue, exchange)
        self.received: list[tuple[float, ThrottleCommand]] = []

    def poll(self) -> None:
        while True:
            method, _, body = self.channel.basic_get(self.queue, auto_ack=True)
            if method is None:
                return
            self.received.append((time.time(), ThrottleCommand.from_json(body)))

    def wait_for(
        self, predicate: Callable[[ThrottleCommand], bool], timeout_s: float
    ) -> tuple[float, ThrottleCommand]:
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline:
            self.poll()
            for arrived, command in self.received[seen:]:
                if predicate(command):
                    return arrived, command
            seen = len(self.received)
            time.sleep(0.01)
        raise AssertionError(
            f"no matching command within {timeout_s} s; got {[c.reason for _, c in self.received]}"
        )

    def close(self) -> None:
        with suppress(Exception):
            self.connection.close()


class Traffic:
    """A thread producing fetch events for one domain at a steady rate; ``blocked_every`` sets the mix."""

    def __init__(self, settings: Settings, domain: str, per_second: int = 40) -> None:
        self.producer = clients.producer(settings.kafka, **{"linger.ms": 0})
        self.topic = settings.topics.fetch_events
        self.domain = domain
        self.interval_s = 1.0 / per_second
        self.blocked_per_ten = 0
        self.sent: list[tuple[float, bool]] = []  # (wall time, blocked)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def send(self, blocked: bool) -> None:
        outcome = "rate_limited" if blocked else "ok"
        value = fetch_event(self.domain, outcome, retry_after_s=2.0 if blocked else None)
        self.producer.produce(self.topic, value, key=self.domain.encode())
        self.producer.poll(0)
        self.sent.append((time.time(), blocked))

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self.send(i % 10 < self.blocked_per_ten)
            i += 1
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.producer.flush(10)


@pytest.fixture
def throttle_settings(control_plane: ControlPlaneFactory) -> Iterator[Settings]:
    settings = control_plane.settings()
    ensure_data_plane_topics(settings)
    yield settings
    _delete_faust_topics(settings)


def _delete_faust_topics(settings: Settings) -> None:
    """The consumer group, changelog and assignor topics Faust made for the app (``<prefix>-throttle*``)."""
    with suppress(Exception):
        admin = clients.admin(settings.kafka)
        prefix = f"{settings.kafka.group_prefix}-throttle"
        for future in admin.delete_consumer_groups([prefix], request_timeout=10).values():
            with suppress(Exception):
                future.result()
        mine = [name for name in admin.list_topics(timeout=10).topics if name.startswith(prefix)]
        if mine:
            for future in admin.delete_topics(mine, operation_timeout=30).values():
                with suppress(Exception):
                    future.result()


@pytest.fixture
def listener(throttle_settings: Settings) -> Iterator[Listener]:
    listening = Listener(throttle_settings)
    yield listening
    listening.close()


class Workers:
    """Starts workers for a test and stops every one of them afterwards, whatever the test did."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.started: list[Worker] = []

    def start(self, tmp_path: Path, **env: str) -> Worker:
        tmp_path.mkdir(parents=True, exist_ok=True)
        snapshot = {"DUALPLANE_THROTTLE_SNAPSHOT_PATH": str(tmp_path / "snap.json")}
        worker = Worker(self.settings, {**BASE_ENV, **env, **snapshot}, tmp_path)
        self.started.append(worker)
        worker.start()
        return worker

    def close(self) -> None:
        for worker in self.started:
            worker.stop()


@pytest.fixture
def workers(throttle_settings: Settings) -> Iterator[Workers]:
    yield from closing(Workers(throttle_settings))


def warm_up(worker: Worker, settings: Settings) -> None:
    """Until the worker has consumed an event: assigned, recovered and processing."""
    # A Faust worker's start (join, assignment, recovery, rewind) took over 60 s at load 75. One event
    # sent before that has left the current window (10 s in some tests) by the time the worker is ready,
    # so the warm-up failed twice at a session's start: an event every 2 s until one is counted.
    warmup = Traffic(settings, "warmup.test", per_second=1)
    warmup.interval_s = 2.0
    warmup.start()
    try:
        worker.wait_for("a warm-up event", lambda: (_total(worker, "warmup.test") or 0) >= 1, timeout_s=180)
    finally:
        warmup.stop()


@dataclass
class Scenario:
    """One domain's traffic through a running worker, watched on the exchange and by a fetcher's view."""

    settings: Settings
    worker: Worker
    listener: Listener
    traffic: Traffic
    applied: dict[int, float] = field(default_factory=dict)  # concurrency -> when a view first applied it

    @property
    def domain(self) -> str:
        return self.traffic.domain

    def on_change(self, changed: str, limits: Limits) -> None:
        if changed == self.domain:
            self.applied.setdefault(limits.concurrency, time.time())


def test_backs_off_on_blocks_then_climbs_and_keeps_the_latest_state(
    throttle_settings: Settings, listener: Listener, workers: Workers, tmp_path: Path
) -> None:
    worker = workers.start(
        tmp_path,
        DUALPLANE_THROTTLE_WINDOW_SIZE_S="10",
        DUALPLANE_THROTTLE_WINDOW_STEP_S="2",
        DUALPLANE_THROTTLE_RECOVERY_S="4",
    )
    scenario = Scenario(throttle_settings, worker, listener, Traffic(throttle_settings, "blocky.test"))
    view = ThrottleView(throttle_settings, on_change=scenario.on_change).start()
    try:
        warm_up(worker, throttle_settings)
        blocked_traffic_backs_off_on_the_crossing_event(scenario)
        healthy_traffic_climbs_back(scenario)
        last = the_latest_state_is_kept(scenario, tmp_path / "snap.json")
        expected = (last.concurrency, last.delay_ms, last.paused)
        assert view.limits(scenario.domain) == expected
        view.close()
        with ThrottleView(throttle_settings) as restarted:  # a restarted fetcher starts from the state
            assert restarted.limits(scenario.domain) == expected
    finally:
        view.close()
        scenario.traffic.stop()


def blocked_traffic_backs_off_on_the_crossing_event(scenario: Scenario) -> None:
    traffic = scenario.traffic
    traffic.blocked_per_ten = 3  # 30% blocked, Retry-After 2 s
    traffic.start()
    arrived, halve = scenario.listener.wait_for(lambda c: c.reason.startswith("backoff"), timeout_s=20)
    # The window crosses the threshold with its 20th event (min_samples): 6 of 20 blocked.
    first_event_s, crossing_s = traffic.sent[0][0], traffic.sent[19][0]
    reaction_s = arrived - crossing_s
    scenario.worker.wait_for(
        "the view to apply the backoff", lambda: halve.concurrency in scenario.applied, timeout_s=30
    )
    print(
        f"\nreaction time: command on the exchange {reaction_s * 1000:.0f} ms after the crossing event "
        f"({(arrived - first_event_s) * 1000:.0f} ms after the window's first event); "
        f"applied by a fetcher's ThrottleView "
        f"{(scenario.applied[halve.concurrency] - crossing_s) * 1000:.0f} ms after it"
    )
    assert (halve.domain, halve.paused, halve.source) == (scenario.domain, False, "auto")
    assert halve.concurrency < 8 or halve.delay_ms > 500, "a backoff lowers the rate the limits allow"
    assert halve.blocked_ratio is not None and halve.blocked_ratio > 0.05
    # Judged on the very event that filled the window to min_samples (20): not at a window step, not
    # on a timer, not a batch later. That holds however slow the machine; the time is printed above
    # (tens of ms here), and bounded only loosely, against a worker that hangs.
    assert halve.window_total == 20, f"judged on the {halve.window_total}th event of the window, not the 20th"
    assert reaction_s < 15.0, f"reaction took {reaction_s:.2f} s"


def healthy_traffic_climbs_back(scenario: Scenario) -> None:
    time.sleep(3)  # a few more blocked steps: more backoffs, never below 1
    scenario.traffic.blocked_per_ten = 0
    arrived, recover = scenario.listener.wait_for(lambda c: c.reason.startswith("climb"), timeout_s=40)
    # Healthy from the event after the last blocked one, not from the switch: 7 of every 10 events
    # were healthy already, and a window judged after the last change may open with such a run just
    # before the switch (CI once saw the recovery 3.98 s after the switch, right on time).
    healthy_from = max(sent_s for sent_s, blocked in list(scenario.traffic.sent) if blocked)
    print(f"first recovery {arrived - healthy_from:.1f} s after the last blocked fetch: {recover.reason}")
    assert arrived - healthy_from >= 4.0, "recovered before the 4 s healthy period"
    scenario.listener.wait_for(lambda c: c.reason.startswith("climb") and c is not recover, timeout_s=20)
    scenario.traffic.stop()

    commands = [command for _, command in scenario.listener.received]
    for command in commands:
        print(f"  {command.issued_at:%H:%M:%S.%f} {command.reason}")
    assert all(1 <= c.concurrency <= 8 for c in commands)
    recovers = [c for c in commands if c.reason.startswith("climb")]
    assert all(  # a climb never slows the domain down: more slots, or the same with a shorter delay
        (b.concurrency, -b.delay_ms) >= (a.concurrency, -a.delay_ms) for a, b in itertools.pairwise(recovers)
    )
    assert all(c.reason.startswith("backoff") for c in commands[: commands.index(recovers[0])])


def the_latest_state_is_kept(scenario: Scenario, snapshot_path: Path) -> ThrottleCommand:
    """The compacted topic and the snapshot file both end at the last command published."""
    worker, listener = scenario.worker, scenario.listener
    worker.wait_for("the publisher to finish", lambda: listener.poll() is None and _settled(worker))
    last = listener.received[-1][1]
    latest = load_latest_state(scenario.settings.kafka, scenario.settings.topics.throttle_state)
    assert latest[scenario.domain] == last, "the compacted topic must hold the last command"

    def snapshot_is_current() -> bool:
        entry = read_snapshot(snapshot_path)["domains"].get(scenario.domain) or {}
        return (entry.get("last_command") or {}).get("reason") == last.reason

    worker.wait_for("the snapshot file", snapshot_is_current, timeout_s=10)
    snapshot = read_snapshot(snapshot_path)
    assert snapshot["domains"][scenario.domain]["concurrency"] == last.concurrency
    assert snapshot["stats"]["bad_events"] == 0
    return last


def _settled(worker: Worker) -> bool:
    snapshot = httpx.get(f"{worker.base_url}/throttle/", timeout=2).json()
    return bool(snapshot["stats"]["publisher"]["pending"] == 0)


def test_a_spent_credit_budget_pauses_every_domain_once_and_status_shows_the_credits(
    throttle_settings: Settings, listener: Listener, workers: Workers, tmp_path: Path
) -> None:
    """Fetches through the scraping API carry what each call cost; the day's budget spent, one
    command pauses every domain (as the API's own "credits used up" does)."""
    worker = workers.start(tmp_path, DUALPLANE_THROTTLE_DAILY_CREDITS="50")
    warm_up(worker, throttle_settings)
    producer = clients.producer(throttle_settings.kafka, **{"linger.ms": 0})
    for _ in range(6):  # 10 credits each, a browser-rendered call: the fifth spends the budget
        value = synthetic_fetch_event("paid.test", "ok", fetched_at=datetime.now(UTC), api_credits=10.0)
        producer.produce(throttle_settings.topics.fetch_events, value, key=b"paid.test")
    assert producer.flush(10) == 0

    _, command = listener.wait_for(lambda c: c.domain == "*", timeout_s=30)
    assert (command.paused, command.source) == (True, "quota")
    assert command.reason.startswith("budget: 50 of 50 scraping-API credits used today"), command.reason
    snapshot_path = tmp_path / "snap.json"
    worker.wait_for("the sixth call counted", lambda: read_snapshot(snapshot_path)["credits"]["used"] == 60)
    throttle = throttle_settings.throttle.model_copy(update={"snapshot_path": str(snapshot_path)})
    shown = credits_today(throttle_settings.model_copy(update={"throttle": throttle}))
    assert shown is not None and (shown["used"], shown["budget"], shown["left"], shown["paused"]) == (
        60.0, 50, 0.0, True,
    )  # fmt: skip
    listener.poll()
    assert [c.domain for _, c in listener.received].count("*") == 1, "one pause a day"


def test_undecodable_values_are_counted_and_skipped(
    throttle_settings: Settings, listener: Listener, workers: Workers, tmp_path: Path
) -> None:
    worker = workers.start(
        tmp_path,
        DUALPLANE_THROTTLE_WINDOW_SIZE_S="60",
        DUALPLANE_THROTTLE_WINDOW_STEP_S="2",
    )
    warm_up(worker, throttle_settings)
    producer = clients.producer(throttle_settings.kafka)
    topic = throttle_settings.topics.fetch_events
    wrong_schema = ThrottleCommand(domain="junk.test", concurrency=1, delay_ms=0).to_avro()
    for junk in (b"", b"not avro", b"\xc3\x01" + b"\x00" * 8, wrong_schema):
        producer.produce(topic, junk, key=b"junk.test")
    traffic = Traffic(throttle_settings, "after-junk.test")
    for _ in range(3):
        traffic.send(blocked=False)
    traffic.stop()
    assert producer.flush(10) == 0
    worker.wait_for("the events after the junk", lambda: _total(worker, "after-junk.test") == 3)
    stats = httpx.get(f"{worker.base_url}/throttle/", timeout=2).json()["stats"]
    assert stats["bad_events"] == 4
    assert stats["errors"] == 0


def _total(worker: Worker, domain: str) -> int | None:
    """The domain's current window count, once the worker has recovered its tables."""
    entry = worker.domain(domain) or {}
    window = entry.get("window_now") or {}
    return window.get("total") if entry.get("ready") else None


class Progress:
    """How far the processor's consumer group has read and committed ``fetch.events``.

    "Ready" (tables recovered) comes before a restarted worker has re-read the events after its last
    committed offset, so a window read at that moment can still lack the newest events; tests that
    compare counts after a restart wait for :meth:`caught_up` first.
    """

    def __init__(self, settings: Settings) -> None:
        self.topic = settings.topics.fetch_events
        # Same group id, never subscribed: reads the group's committed offsets without joining it.
        self.consumer = clients.consumer(settings.kafka, settings.throttle_app_id)
        partitions = self.consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        self.partitions = [TopicPartition(self.topic, p) for p in sorted(partitions)]

    def ends(self) -> dict[int, int]:
        """Partition -> offset after its last value."""
        consumer = self.consumer
        return {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in self.partitions}

    def committed(self) -> dict[int, int]:
        """Partition -> the group's committed offset (negative when it has none)."""
        return {tp.partition: tp.offset for tp in self.consumer.committed(self.partitions, timeout=10)}

    def all_committed(self) -> bool:
        committed = self.committed()
        return all(committed[p] >= end for p, end in self.ends().items() if end > 0)

    def caught_up(self, worker: Worker) -> bool:
        """Every value in the topic was handled by ``worker`` or committed before it started."""
        try:
            snapshot = httpx.get(f"{worker.base_url}/throttle/", timeout=2).json()
        except (httpx.HTTPError, ValueError):
            return False
        if not snapshot.get("ready"):
            return False
        handled, committed = snapshot["offsets"], self.committed()
        ends = {p: end for p, end in self.ends().items() if end > 0}
        return all(max(handled.get(str(p), -1), committed[p] - 1) >= end - 1 for p, end in ends.items())

    def close(self) -> None:
        self.consumer.close()


@pytest.fixture
def progress(throttle_settings: Settings) -> Iterator[Progress]:
    yield from closing(Progress(throttle_settings))


def test_a_killed_worker_recovers_its_windows_and_state_from_the_changelogs(
    throttle_settings: Settings, listener: Listener, workers: Workers, progress: Progress, tmp_path: Path
) -> None:
    # A 120 s window, so the counts are still in their window after two restarts; offsets committed
    # rarely, so the kill always comes before the commit and the restarted worker gets the events again.
    worker = workers.start(
        tmp_path,
        DUALPLANE_THROTTLE_WINDOW_SIZE_S="120",
        DUALPLANE_THROTTLE_WINDOW_STEP_S="2",
        DUALPLANE_THROTTLE_COMMIT_INTERVAL_S="60",
    )
    domain = "restart.test"
    traffic = Traffic(throttle_settings, domain)
    try:
        warm_up(worker, throttle_settings)
        for i in range(19):  # one short of min_samples: no command yet
            traffic.send(blocked=i < 5)
        traffic.producer.flush(10)
        worker.wait_for("19 counted events", lambda: _total(worker, domain) == 19)

        killed = time.monotonic()
        worker.kill()
        worker.start()
        worker.wait_for("the recovered window", lambda: _total(worker, domain) is not None, timeout_s=90)
        recovered = _total(worker, domain)
        # The changelog may lack the last events' updates (SIGKILL beat the producer); their offsets
        # were not committed, so the new worker reads them again right after recovering.
        worker.wait_for("the replayed events", lambda: progress.caught_up(worker), timeout_s=30)
        print(
            f"\nkilled worker replaced and recovered in {time.monotonic() - killed:.1f} s "
            f"({recovered} events counted from the changelog, {_total(worker, domain)} after the replay)"
        )
        assert _total(worker, domain) == 19, "the window must be recovered, and replayed events not recounted"
        listener.poll()  # every command the workers announced so far is on the listener's queue now
        issued = [command.reason for _, command in listener.received if command.domain == domain]
        assert issued == [], f"events counted twice made the worker judge {domain}: {issued}"

        traffic.send(blocked=True)  # the 20th event: 6 of 20 blocked -> back off
        traffic.producer.flush(10)
        _, first = listener.wait_for(lambda c: c.domain == domain, timeout_s=20)
        assert first.reason.startswith("backoff:") and "of 20 fetches" in first.reason, first.reason
        limits = (first.concurrency, first.delay_ms)

        worker.kill()
        worker.start()

        def recovered() -> bool:
            entry = worker.domain(domain) or {}
            return (entry.get("concurrency"), entry.get("delay_ms")) == limits

        worker.wait_for("the recovered state", recovered, timeout_s=90)
        time.sleep(4.5)  # two steps past the first change: a post-change window the policy judges
        for i in range(30):
            traffic.send(blocked=i % 10 < 3)
        traffic.producer.flush(10)
        _, second = listener.wait_for(lambda c: c.domain == domain and c is not first, timeout_s=20)
        # Judged from the recovered state: from the first backoff's limits, not the defaults (8, 500).
        from_first = f"concurrency {first.concurrency} -> {second.concurrency}, delay {first.delay_ms} ->"
        assert second.reason.startswith("backoff:") and from_first in second.reason, second.reason
        listener.poll()
        assert [c for _, c in listener.received if c.domain == domain] == [first, second]
    finally:
        traffic.stop()


def test_offsets_are_committed_only_after_the_window_updates_they_cover(
    throttle_settings: Settings, workers: Workers, progress: Progress, tmp_path: Path
) -> None:
    """SIGKILL mid-burst, right after a commit: every committed event must keep its count.

    Each event writes its bucket to a changelog, so a burst keeps the producer's buffer full while Faust
    commits every 0.2 s. faust-streaming's own flush returns before such a buffer is empty (see
    :mod:`data_plane.throttle.producer`), which used to commit events whose window updates were still
    buffered: the kill lost them, and being committed they were not read again.
    """
    worker = workers.start(
        tmp_path,
        DUALPLANE_THROTTLE_WINDOW_SIZE_S="600",  # long enough for a slow restart on a loaded machine
        DUALPLANE_THROTTLE_WINDOW_STEP_S="30",
        DUALPLANE_THROTTLE_COMMIT_INTERVAL_S="0.2",
    )
    domain, burst = "burst.test", 300
    traffic = Traffic(throttle_settings, domain)
    warm_up(worker, throttle_settings)
    before = sum(progress.ends().values())
    for _ in range(burst):
        traffic.send(blocked=False)
    traffic.stop()
    halfway = before + burst // 2
    deadline = time.monotonic() + 60
    while sum(max(0, offset) for offset in progress.committed().values()) < halfway:
        worker.require_running()
        assert time.monotonic() < deadline, f"half the burst was not committed within 60 s:\n{worker.logs()}"
        time.sleep(0.01)
    worker.kill()  # commits are every 0.2 s: this lands right after one, mid-burst
    worker.start()
    worker.wait_for("the recovered window", lambda: _total(worker, domain) is not None, timeout_s=180)
    recovered = _total(worker, domain)
    worker.wait_for("the worker to catch up", lambda: progress.caught_up(worker), timeout_s=60)
    final = _total(worker, domain)
    print(f"\n{recovered} of {burst} events counted from the changelog, {final} after the replay")
    assert final == burst, "committed events must keep their counts through a SIGKILL"


def test_a_rebalance_moves_windows_to_the_surviving_worker(
    throttle_settings: Settings, listener: Listener, workers: Workers, progress: Progress, tmp_path: Path
) -> None:
    """Two workers share the partitions; the one owning the domain dies; the other carries on."""
    env = {"DUALPLANE_THROTTLE_WINDOW_SIZE_S": "120", "DUALPLANE_THROTTLE_WINDOW_STEP_S": "2"}
    pair = [workers.start(tmp_path / name, **env) for name in ("a", "b")]
    domain = "rebalance.test"
    traffic = Traffic(throttle_settings, domain)
    try:
        for worker in pair:
            worker.wait_for(
                "a share of the partitions", lambda w=worker: _partitions(w) not in (None, [], [0, 1, 2])
            )
        for i in range(19):
            traffic.send(blocked=i < 5)
        traffic.producer.flush(10)
        # The owner is the worker that processed the events (a standby replica may hold the window too).
        pair[0].wait_for("the owner to count 19", lambda: sum(_processed(w, domain) == 19 for w in pair) == 1)
        owner = next(w for w in pair if _processed(w, domain) == 19)
        survivor = next(w for w in pair if w is not owner)
        owner.kill()
        moved = time.monotonic()
        survivor.wait_for("all partitions", lambda: _partitions(survivor) == [0, 1, 2], timeout_s=90)
        survivor.wait_for("the moved window", lambda: _total(survivor, domain) is not None, timeout_s=30)
        survivor.wait_for("the replayed events", lambda: progress.caught_up(survivor), timeout_s=30)
        print(f"\nrebalanced to the surviving worker in {time.monotonic() - moved:.1f} s")
        assert _total(survivor, domain) == 19, "the windows of a moved partition must come with it"

        traffic.send(blocked=True)  # the 20th event: 6 of 20 blocked
        traffic.producer.flush(10)
        _, command = listener.wait_for(lambda c: c.domain == domain, timeout_s=20)
        assert command.reason.startswith("backoff:") and "of 20 fetches" in command.reason, command.reason
    finally:
        traffic.stop()


def _partitions(worker: Worker) -> list[int] | None:
    try:
        snapshot = httpx.get(f"{worker.base_url}/throttle/", timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return None
    return list(snapshot["partitions"]) if snapshot.get("ready") else None


def _processed(worker: Worker, domain: str) -> int | None:
    """The total of the window this worker last judged for ``domain`` (None: it never processed it)."""
    window = (worker.domain(domain) or {}).get("window") or {}
    return window.get("total")
