"""Consumer lag asks again while the group's coordinator is moving, and gives up on real errors."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from dualplane.brokers.kafka import lag

pytestmark = pytest.mark.unit


class Answers:
    """A consumer whose ``committed`` raises the given errors in turn, then answers."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.calls = 0

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return [TopicPartition(tp.topic, tp.partition, 7) for tp in partitions]


def test_a_busy_coordinator_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lag, "RETRY_PAUSE_S", 0.01)
    consumer: Any = Answers(KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
    assert lag._committed(consumer, [TopicPartition("t", 0), TopicPartition("t", 1)], 5.0) == {0: 7, 1: 7}
    assert consumer.calls == 3


def test_other_errors_and_a_coordinator_busy_past_the_timeout_are_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lag, "RETRY_PAUSE_S", 0.01)
    with pytest.raises(KafkaException):
        lag._committed(Answers(KafkaError.GROUP_AUTHORIZATION_FAILED), [TopicPartition("t", 0)], 5.0)  # type: ignore[arg-type]
    endless: Any = Answers(*[KafkaError.NOT_COORDINATOR] * 1000)
    with pytest.raises(KafkaException):
        lag._committed(endless, [TopicPartition("t", 0)], 0.2)
    # Asked again every RETRY_PAUSE_S until the 0.2 s timeout: about 20 times (fewer on a slow
    # machine, never more); one call means no retry, hundreds a timeout that was not kept.
    assert 2 <= endless.calls <= 0.2 / 0.01 + 2
