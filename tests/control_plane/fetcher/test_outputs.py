"""The fetcher's Kafka hand-off replaces a producer that failed fatally instead of failing forever.

librdkafka's idempotent producer can fail fatally after a broker restart (out-of-order sequence,
unknown producer id); it then refuses every message. The broker cannot be made to do that on cue,
so a stand-in producer plays the failing client here; the Kafka-outage test in
tests/e2e/test_crawl_pipeline.py covers the real broker restart.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError

from dualplane.control_plane.fetcher.outputs import KafkaOutputs
from dualplane.control_plane.fetcher.runner import HandOffFailed
from dualplane.core.settings import Settings

pytestmark = pytest.mark.unit

FATAL = KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "sequence desynchronization", fatal=True)


class StandInProducer:
    """Confirms (or fails with ``error``) each message on the next poll, as librdkafka does."""

    def __init__(self, error: KafkaError | None, config: dict[str, Any]) -> None:
        self.error = error
        self.config = config
        self.pending: list[Callable[[KafkaError | None, object], None]] = []
        self.purged = False
        self.lock = threading.Lock()

    def produce(self, topic: str, value: bytes, key: bytes, *, headers: object, on_delivery: Any) -> None:
        with self.lock:
            self.pending.append(on_delivery)

    def poll(self, timeout: float) -> int:
        with self.lock:
            callbacks, self.pending = self.pending, []
        for callback in callbacks:
            callback(self.error, None)
        return len(callbacks)

    def purge(self) -> None:
        self.purged = True
        self.error = self.error or KafkaError(KafkaError._PURGE_QUEUE, "purged")

    def flush(self, timeout: float = 0) -> int:
        self.poll(0)
        return 0


def _outputs(errors: list[KafkaError | None]) -> tuple[KafkaOutputs, list[StandInProducer]]:
    made: list[StandInProducer] = []

    def new_producer(kafka: object, **config: Any) -> StandInProducer:
        made.append(StandInProducer(errors[len(made)], config))
        return made[-1]

    return KafkaOutputs(Settings(), new_producer=new_producer), made  # type: ignore[arg-type]


def test_a_fatally_failed_producer_is_replaced_and_the_next_message_goes_through() -> None:
    outputs, made = _outputs([FATAL, None])
    try:
        asyncio.run(_first_fails_then_succeeds(outputs))
    finally:
        outputs.close(1)
    assert outputs.producers_replaced == 1
    assert made[0].purged
    assert "error_cb" in made[1].config


async def _first_fails_then_succeeds(outputs: KafkaOutputs) -> None:
    first = await outputs._produce(outputs.topics.fetch_events, "example.com", b"e1", [])
    with pytest.raises(HandOffFailed, match="did not confirm"):
        await asyncio.wait_for(first, 5)
    second = await outputs._produce(outputs.topics.fetch_events, "example.com", b"e2", [])
    await asyncio.wait_for(second, 5)


def test_a_fatal_error_reported_by_the_error_callback_also_replaces_the_producer() -> None:
    outputs, made = _outputs([None, None])
    try:
        made[0].config["error_cb"](FATAL)
        asyncio.run(_confirmed(outputs))
    finally:
        outputs.close(1)
    assert outputs.producers_replaced == 1
    assert outputs.producer is made[1]


def test_transient_errors_keep_the_producer() -> None:
    outputs, made = _outputs([None])
    try:
        made[0].config["error_cb"](KafkaError(KafkaError._TRANSPORT, "broker down"))
        asyncio.run(_confirmed(outputs))
    finally:
        outputs.close(1)
    assert outputs.producers_replaced == 0
    assert len(made) == 1


async def _confirmed(outputs: KafkaOutputs) -> None:
    delivery = await outputs._produce(outputs.topics.fetch_events, "example.com", b"e", [])
    await asyncio.wait_for(delivery, 5)


def test_a_message_left_unconfirmed_past_the_hand_off_timeout_replaces_the_producer() -> None:
    """librdkafka reports the stall itself (message timed out): no fatal error, still a broken producer."""
    outputs, made = _outputs([KafkaError(KafkaError._MSG_TIMED_OUT, "message timed out"), None])
    try:
        asyncio.run(_first_fails_then_succeeds(outputs))
    finally:
        outputs.close(1)
    assert outputs.producers_replaced == 1
    assert made[0].purged
    assert made[0].config["delivery.timeout.ms"] == 30_000  # DUALPLANE_FETCH_HAND_OFF_TIMEOUT_S


class SilentProducer(StandInProducer):
    """Takes messages and never reports on them: the hand-off must still end."""

    def poll(self, timeout: float) -> int:
        return 0


def test_a_hand_off_without_any_delivery_report_fails_in_time_and_replaces_the_producer() -> None:
    made: list[StandInProducer] = []

    def new_producer(kafka: object, **config: Any) -> StandInProducer:
        made.append((SilentProducer if not made else StandInProducer)(None, config))
        return made[-1]

    settings = Settings()
    settings = settings.model_copy(
        update={"fetch": settings.fetch.model_copy(update={"hand_off_timeout_s": 1})}
    )
    outputs = KafkaOutputs(settings, new_producer=new_producer)  # type: ignore[arg-type]
    outputs.report_grace_s = 0.5
    event = {"trace_id": "t", "job_id": "j", "domain": "example.com"}
    try:
        with pytest.raises(HandOffFailed, match="no delivery report"):
            asyncio.run(_send_encoded(outputs, event))
        asyncio.run(_confirmed(outputs))
    finally:
        outputs.close(1)
    assert outputs.producers_replaced == 1
    assert outputs.producer is made[1]


async def _send_encoded(outputs: KafkaOutputs, event: dict[str, str]) -> None:
    outputs._encode = lambda name, record, topic: b"e"  # type: ignore[method-assign]
    await asyncio.wait_for(outputs.send(None, event), 10)
