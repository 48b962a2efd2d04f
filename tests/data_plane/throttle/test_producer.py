"""The throttle processor's producer: ``flush`` waits for every message buffered before it (no broker).

Faust's own flush is replaced by one that returns at once, as faust-streaming's does when its buffer
makes no progress for 0.1 s; the futures stand for changelog writes and are resolved by hand.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from faust.transport.drivers.aiokafka import Producer as AIOKafkaProducer
from faust.types import FutureMessage

from dualplane.data_plane.throttle.exceptions import ChangelogWriteFailed
from dualplane.data_plane.throttle.producer import ChangelogSafeProducer, ThrottleApp

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def faust_flush_returns_early(monkeypatch: pytest.MonkeyPatch) -> None:
    async def returns_at_once(self: Any) -> None:
        return None

    monkeypatch.setattr(AIOKafkaProducer, "flush", returns_at_once)


def run(scenario: Callable[[ChangelogSafeProducer, Callable[[], FutureMessage]], Awaitable[None]]) -> None:
    async def main() -> None:
        app = ThrottleApp("unit-throttle-producer", broker="kafka://127.0.0.1:1")
        producer = app.producer
        assert isinstance(producer, ChangelogSafeProducer)
        topic = app.topic("unit-changelog", key_type=bytes, value_type=bytes)

        def send() -> FutureMessage:
            fut = topic.as_future_message(key=b"key", value=b"value")
            producer.send_soon(fut)
            return fut

        await scenario(producer, send)

    asyncio.run(main())


def test_flush_returns_only_when_every_earlier_message_is_acknowledged() -> None:
    async def scenario(producer: ChangelogSafeProducer, send: Callable[[], FutureMessage]) -> None:
        first, second = send(), send()
        flush = asyncio.ensure_future(producer.flush())
        first.set_result(None)
        await asyncio.sleep(0.05)
        assert not flush.done(), "flush returned with a write still unacknowledged"
        second.set_result(None)
        await asyncio.wait_for(flush, 1)
        assert producer.unacknowledged == set()

    run(scenario)


def test_flush_does_not_wait_for_messages_sent_after_it_started() -> None:
    async def scenario(producer: ChangelogSafeProducer, send: Callable[[], FutureMessage]) -> None:
        earlier = send()
        flush = asyncio.ensure_future(producer.flush())
        await asyncio.sleep(0)
        later = send()  # the agent keeps going while a commit flushes
        earlier.set_result(None)
        await asyncio.wait_for(flush, 1)
        assert producer.unacknowledged == {later}

    run(scenario)


def test_a_failed_write_makes_every_later_flush_raise() -> None:
    async def scenario(producer: ChangelogSafeProducer, send: Callable[[], FutureMessage]) -> None:
        send().set_exception(RuntimeError("broker said no"))
        await asyncio.sleep(0)
        for _ in range(2):  # sticky: a later commit must not slip past the lost write either
            with pytest.raises(ChangelogWriteFailed, match="broker said no"):
                await producer.flush()

    run(scenario)


def test_flush_hooks_run_first_so_their_writes_are_owed_by_that_flush() -> None:
    async def scenario(producer: ChangelogSafeProducer, send: Callable[[], FutureMessage]) -> None:
        held: list[FutureMessage] = []
        cast_app: Any = producer.app
        cast_app.flush_hooks.append(lambda: held.append(send()))  # writes held back until the flush
        flush = asyncio.ensure_future(producer.flush())
        await asyncio.sleep(0.05)
        assert len(held) == 1 and not flush.done(), "the flush must wait for what its hooks wrote"
        held[0].set_result(None)
        await asyncio.wait_for(flush, 1)

    run(scenario)
