"""librdkafka's log lines go through Python logging, as warnings, folded; never raw to stderr (#27 P8).

``crawl --wait`` printed 105-137 raw ``%3|…|FAIL|…`` lines during one broker restart: librdkafka
wrote them to the process's stderr itself, past our logging. A real client against a port where
no broker listens shows where its lines go now.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest

from dualplane.brokers.kafka.logs import KafkaLog
from tests.support.cli import free_ports

pytestmark = pytest.mark.unit


def test_a_clients_librdkafka_lines_land_in_python_logging_not_raw_stderr() -> None:
    (port,) = free_ports(1)
    code = textwrap.dedent(f"""
        import logging, time
        from dualplane.brokers.kafka import clients
        from dualplane.core.settings import KafkaSettings
        logging.basicConfig(format="PYLOG %(levelname)s %(name)s %(message)s")
        producer = clients.producer(KafkaSettings(bootstrap_servers="127.0.0.1:{port}"))
        consumer = clients.consumer(KafkaSettings(bootstrap_servers="127.0.0.1:{port}"), "logs-test")
        ends_at = time.monotonic() + 4
        while time.monotonic() < ends_at:
            producer.poll(0.2)
            consumer.poll(0.2)
    """)
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    lines = done.stderr.splitlines()
    raw = [line for line in lines if line.startswith("%")]
    ours = [line for line in lines if line.startswith("PYLOG") and " librdkafka " in line]
    assert done.returncode == 0, done.stderr
    assert raw == [], f"{len(raw)} raw librdkafka lines, e.g. {raw[:2]}"
    assert ours, lines
    assert all(line.startswith("PYLOG WARNING librdkafka ") for line in ours), ours
    assert any(f"127.0.0.1:{port}" in line for line in ours), ours
    # Folded: one line per client and kind in 4 s, not one per reconnect attempt.
    assert len(ours) <= 4, ours


class Clock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def test_repeats_are_folded_and_counted_per_client_and_kind(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    kafka_log = KafkaLog(logging.getLogger("librdkafka-test"), repeat_s=30, clock=clock)
    caplog.set_level(logging.DEBUG, logger="librdkafka-test")
    for _ in range(5):
        kafka_log.log(logging.ERROR, "%s [%s] %s", "FAIL", "producer-1", "Connect failed")
        clock.now_s += 1
    kafka_log.log(logging.ERROR, "%s [%s] %s", "FAIL", "producer-2", "Connect failed")
    kafka_log.log(logging.ERROR, "%s [%s] %s", "SSL", "producer-1", "certificate rejected")
    clock.now_s += 30
    kafka_log.log(logging.ERROR, "%s [%s] %s", "FAIL", "producer-1", "Connect failed")

    seen = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert seen == [
        ("WARNING", "FAIL [producer-1] Connect failed"),
        ("WARNING", "FAIL [producer-2] Connect failed"),
        ("ERROR", "SSL [producer-1] certificate rejected"),  # not a retried failure: stays an error
        ("WARNING", "FAIL [producer-1] Connect failed (4 more like it in the last 30 s)"),
    ]


def test_a_settling_idempotence_pid_is_information_not_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """``make demo`` showed ``GETPID … Failed to acquire idempotence PID … retrying`` in its live view."""
    kafka_log = KafkaLog(logging.getLogger("librdkafka-test"))
    caplog.set_level(logging.DEBUG, logger="librdkafka-test")
    text = "Failed to acquire idempotence PID from broker 1: Coordinator load in progress: retrying"
    kafka_log.log(logging.WARNING, "%s [%s] %s", "GETPID", "producer-1", text)
    assert [record.levelname for record in caplog.records] == ["INFO"]
