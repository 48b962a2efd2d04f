"""reader.watermarks asks a partition without a leader again (a topic created a moment ago), and
raises any other error at once. The consumer is a stand-in: what is tested is the retry rule alone
(a real broker elects a leader too fast, and too unevenly, to catch it in the act)."""

from __future__ import annotations

from typing import cast

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from dualplane.brokers.kafka.reader import watermarks

pytestmark = pytest.mark.unit

PARTITION = TopicPartition("fetch.profiles", 0)


class Leaderless:
    """Answers ``code`` to the first ``failures`` asks, then the offsets."""

    def __init__(self, failures: int, code: int = KafkaError.NOT_LEADER_FOR_PARTITION) -> None:
        self.failures, self.code, self.asks = failures, code, 0

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        self.asks += 1
        if self.asks <= self.failures:
            raise KafkaException(KafkaError(self.code))
        return 0, 5


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    ],
)
def test_a_partition_without_a_leader_is_asked_again_until_it_answers(code: int) -> None:
    consumer = Leaderless(failures=3, code=code)
    assert watermarks(cast("Consumer", consumer), PARTITION, timeout_s=30) == (0, 5)
    assert consumer.asks == 4


def test_another_error_is_raised_at_once() -> None:
    consumer = Leaderless(failures=1, code=KafkaError._TRANSPORT)
    with pytest.raises(KafkaException):
        watermarks(cast("Consumer", consumer), PARTITION, timeout_s=30)
    assert consumer.asks == 1


def test_a_partition_that_never_gets_a_leader_fails_after_the_timeout() -> None:
    consumer = Leaderless(failures=10**9)
    with pytest.raises(KafkaException):
        watermarks(cast("Consumer", consumer), PARTITION, timeout_s=0.5)
    assert consumer.asks >= 2
