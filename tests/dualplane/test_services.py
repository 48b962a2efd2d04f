"""``run_services``: a service that dies on its own takes the process down with status 1."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from pika.exceptions import AMQPConnectionError

from dualplane import services
from dualplane.control_plane.fetcher.profile_store import ProfileStoreError
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle.exceptions import ThrottleError
from dualplane.services import ConsumerService, restart_log_level, run_services

pytestmark = pytest.mark.unit


def _service(name: str, run: Callable[[], None], stopped: threading.Event) -> ConsumerService:
    return ConsumerService(name, run, stopped.set, lambda: None)


def _until(event: threading.Event) -> Callable[[], None]:
    def run() -> None:
        event.wait()

    return run


@pytest.fixture(autouse=True)
def _keep_pytest_signal_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signal, "signal", lambda *_args: None)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the crash itself
def test_a_crashed_service_stops_the_others_and_exits_with_status_1(monkeypatch: pytest.MonkeyPatch) -> None:
    healthy_stopped = threading.Event()

    def crash() -> None:
        raise RuntimeError("broker said no")

    registry = {
        "crashing": lambda _settings: _service("crashing", crash, threading.Event()),
        "healthy": lambda _settings: _service("healthy", _until(healthy_stopped), healthy_stopped),
    }
    monkeypatch.setattr(services, "REGISTRY", registry)

    with pytest.raises(SystemExit) as exited:
        run_services(Settings(), ["crashing", "healthy"])

    assert exited.value.code == 1
    assert healthy_stopped.is_set()


def test_a_stop_request_ends_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    stopped = threading.Event()
    monkeypatch.setattr(services, "REGISTRY", {"idle": lambda _s: _service("idle", _until(stopped), stopped)})
    handlers: dict[int, Callable[[int, object], None]] = {}
    monkeypatch.setattr(signal, "signal", handlers.__setitem__)
    threading.Timer(0.3, lambda: handlers[signal.SIGTERM](signal.SIGTERM, None)).start()

    run_services(Settings(), ["idle"])  # returns: no SystemExit

    assert stopped.is_set()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the crash itself
def test_the_heartbeat_beats_while_every_service_runs_and_stops_with_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(services, "HEARTBEAT_EVERY_S", 0.0)
    heartbeat = tmp_path / "alive"
    crash_now = threading.Event()
    beats: list[int] = []

    def watch_then_crash() -> None:
        while len(beats) < 3:  # the file is touched again and again while the service runs
            if heartbeat.exists() and heartbeat.stat().st_mtime_ns not in beats:
                beats.append(heartbeat.stat().st_mtime_ns)
            time.sleep(0.05)
        crash_now.set()
        raise RuntimeError("broker said no")

    registry = {"watching": lambda _s: _service("watching", watch_then_crash, threading.Event())}
    monkeypatch.setattr(services, "REGISTRY", registry)

    with pytest.raises(SystemExit):
        run_services(Settings(), ["watching"], heartbeat=heartbeat)
    last = heartbeat.stat().st_mtime_ns
    time.sleep(0.6)

    assert crash_now.is_set() and len(beats) == 3
    assert heartbeat.stat().st_mtime_ns == last, "a dead service's process must not look alive"


@pytest.mark.unit
def test_a_faust_worker_that_exits_once_is_a_warning_and_one_crash_looping_is_an_error() -> None:
    level, quick = restart_log_level(ran_s=3.0, quick_exits=0)
    assert (level, quick) == (logging.WARNING, 1)  # a broker restart cut its first rebalance short
    level, quick = restart_log_level(ran_s=2.0, quick_exits=quick)
    assert level == logging.WARNING
    level, quick = restart_log_level(ran_s=2.0, quick_exits=quick)
    assert (level, quick) == (logging.ERROR, 3)  # dying at every start: a person should look
    assert restart_log_level(ran_s=3600.0, quick_exits=quick) == (logging.WARNING, 0)  # it had run an hour


def _builds(*outcomes: Exception | str) -> Callable[[], object]:
    """A build that raises or returns each outcome in turn."""
    left = list(outcomes)

    def build() -> object:
        outcome = left.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return build


def test_a_start_while_a_broker_restarts_is_tried_again_until_it_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    not_yet = KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata"))
    build = _builds(not_yet, ThrottleError("could not subscribe"), "group")

    with caplog.at_level(logging.WARNING, logger="dualplane.services"):
        got = services.start_when_brokers_answer(build, "fetcher", threading.Event(), first_retry_s=0.01)

    assert got == "group"
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["fetcher could not start yet"] * 2


def test_a_broker_that_never_answers_ends_the_start_with_its_own_error() -> None:
    build = _builds(*[AMQPConnectionError("no RabbitMQ node answered")] * 50)

    with pytest.raises(AMQPConnectionError, match="no RabbitMQ node answered"):
        services.start_when_brokers_answer(
            build, "frontier", threading.Event(), wait_s=0.2, first_retry_s=0.01
        )


def test_an_error_that_is_no_broker_outage_ends_the_start_at_once() -> None:
    build = _builds(ValueError("bad setting"), "group")

    with pytest.raises(ValueError, match="bad setting"):
        services.start_when_brokers_answer(build, "fetcher", threading.Event(), first_retry_s=0.01)


def test_a_stop_request_while_waiting_for_the_brokers_ends_the_wait() -> None:
    stopping = threading.Event()
    stopping.set()
    build = _builds(ProfileStoreError("could not reach the profiles topic"), "group")

    assert services.start_when_brokers_answer(build, "fetcher", stopping) is None
