"""Bounded waits around Kafka client calls that have been seen to outlive their own timeouts."""

from __future__ import annotations

import threading

import pytest

from dualplane.brokers.kafka.clients import ClientWedged, close_within, within

pytestmark = pytest.mark.unit


def test_a_call_that_returns_gives_its_value_and_one_that_raises_gives_its_error() -> None:
    assert within(lambda: 42, 5, "answer") == 42
    with pytest.raises(ValueError, match="bad offsets"):
        within(lambda: (_ for _ in ()).throw(ValueError("bad offsets")), 5, "send_offsets")


def test_a_call_that_blocks_beyond_the_bound_is_abandoned() -> None:
    release = threading.Event()
    with pytest.raises(ClientWedged, match="commit_transaction did not return within 0 s"):
        within(lambda: release.wait(30), 0.2, "commit_transaction")
    release.set()


class _Closable:
    def __init__(self, blocks_until: threading.Event | None = None) -> None:
        self.blocks_until = blocks_until
        self.closed = False

    def close(self) -> None:
        if self.blocks_until is not None:
            self.blocks_until.wait(30)
        self.closed = True


def test_a_consumer_that_will_not_close_is_abandoned_after_the_bound() -> None:
    assert close_within(_Closable(), 5) is True  # type: ignore[arg-type]
    release = threading.Event()
    assert close_within(_Closable(release), 0.2) is False  # type: ignore[arg-type]
    release.set()
