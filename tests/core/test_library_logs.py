"""Client libraries that reconnect by themselves log a broker restart as WARNING lines, one line each,
repeats folded (#34: 3,431 ERROR lines and 22 tracebacks for one Kafka and one RabbitMQ restart)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from dualplane.core import logs

pytestmark = pytest.mark.unit


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logs.configure("info", "json")
    handler.setStream(stream)  # type: ignore[attr-defined]
    yield stream
    logging.getLogger().removeHandler(handler)


def _records(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_an_aiokafka_error_with_a_traceback_is_one_warning_line(lines: io.StringIO) -> None:
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        logging.getLogger("aiokafka.conn").exception("Unable connect to node with id %s", 1)

    (record,) = _records(lines)
    assert record["level"] == "WARNING" and "exc_info" not in record
    assert (
        record["message"]
        == "Unable connect to node with id 1 (ConnectionResetError: [Errno 104] Connection reset by peer)"
    )


def test_a_stack_written_into_pikas_message_is_cut_to_its_first_line(lines: io.StringIO) -> None:
    stack = "Traceback (most recent call last):\n  File 'x.py', line 1\nConnectionResetError: 104"
    logging.getLogger("pika.adapters.utils.io_services_utils").error("_produce() failed; stack:\n%s", stack)

    (record,) = _records(lines)
    assert record["level"] == "WARNING" and record["message"] == "_produce() failed; stack:"


def test_repeats_are_folded_and_counted(lines: io.StringIO) -> None:
    log = logging.getLogger("aiokafka")
    for _ in range(500):
        log.error("Unable to update metadata from %s", [1])

    (record,) = _records(lines)  # the other 499 within REPEAT_S are folded, counted in the next one
    assert record["message"] == "Unable to update metadata from [1]"
    clock = [0.0]
    folding = logs.RecoveringLibraries(logs.Repeats(30, clock=lambda: clock[0]))
    made = [
        logging.LogRecord("faust.worker", logging.ERROR, "", 0, "crashed %s", ("x",), None) for _ in range(4)
    ]
    kept = [folding.filter(made[0]), folding.filter(made[1]), folding.filter(made[2])]
    clock[0] = 31.0
    kept.append(folding.filter(made[3]))
    assert kept == [True, False, False, True]
    assert made[3].getMessage() == "crashed x (2 more like it in the last 30 s)"


def test_our_own_errors_and_other_libraries_are_left_alone(lines: io.StringIO) -> None:
    logging.getLogger("dualplane.control_plane.frontier").error("the frontier's own error")
    logging.getLogger("aiokafka_lookalike").error("not aiokafka")

    assert [(r["level"], r["message"]) for r in _records(lines)] == [
        ("ERROR", "the frontier's own error"),
        ("ERROR", "not aiokafka"),
    ]
