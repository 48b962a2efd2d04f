"""Batches prepared on threads come back in consumed order, each with its item or why it is unwritable."""

from __future__ import annotations

import threading
import time
from typing import Any, BinaryIO

import pytest

from dualplane.connectors.sink.base import FileStart, Item, Sink, SinkFile
from dualplane.connectors.sink.exceptions import SinkUnavailable, Unwritable
from dualplane.connectors.sink.prepare import Preparer


class _Message:
    def __init__(self, topic: str, offset: int) -> None:
        self._topic, self._offset = topic, offset

    def topic(self) -> str:
        return self._topic

    def offset(self) -> int:
        return self._offset


class _Sink(Sink):
    """Prepares offset N after a delay that shrinks with N, so threads finish in reverse order."""

    def __init__(self, topic: str, *, threaded: bool) -> None:
        self.topic, self.threaded_prepare = topic, threaded
        self.threads: set[str] = set()

    def prepare(self, message: Any) -> Item:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.002 * (10 - message.offset() % 10))
        if message.offset() == 7:
            raise Unwritable("offset 7 is garbage")
        if message.offset() == 13:
            raise SinkUnavailable("offset 13 needs S3")
        return Item("", None, message.offset())

    def open_file(self, stream: BinaryIO, start: FileStart, first: Item) -> SinkFile:
        raise NotImplementedError


def test_outcomes_come_in_consumed_order_with_unwritables_and_threaded_sinks_on_workers() -> None:
    warc, avro = _Sink("pages", threaded=True), _Sink("records", threaded=False)
    preparer = Preparer({"pages": warc, "records": avro}, threads=3)
    batch = [_Message("pages" if i % 3 else "records", i) for i in range(10)]
    try:
        outcomes = list(preparer.prepared(batch))  # type: ignore[arg-type]
    finally:
        preparer.close()

    assert [m.offset() for m, _ in outcomes] == list(range(10))
    assert [o.payload if isinstance(o, Item) else str(o) for _, o in outcomes] == [
        *range(7),
        "offset 7 is garbage",
        8,
        9,
    ]
    assert all(name.startswith("s3-sink-prepare") for name in warc.threads)
    assert avro.threads == {threading.current_thread().name}  # a sink not marked threaded stays inline


def test_another_failure_is_raised_when_the_session_reaches_that_message() -> None:
    preparer = Preparer({"pages": _Sink("pages", threaded=True)}, threads=2)
    handed: list[int | None] = []
    try:
        with pytest.raises(SinkUnavailable, match="offset 13"):
            for message, _ in preparer.prepared([_Message("pages", i) for i in range(10, 16)]):  # type: ignore[misc]
                handed.append(message.offset())
    finally:
        preparer.close()

    assert handed == [10, 11, 12]  # those before it were handed over, in order; none after it
