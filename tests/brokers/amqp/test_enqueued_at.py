"""When a message entered the queue it was delivered from: the fetchers' lane-wait metric reads it.

Quorum queues (the lanes) report no head-message age, so the publisher stamps every message and a
message that came back through a retry tier carries RabbitMQ's ``x-death`` time of that return.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers import amqp
from dualplane.brokers.amqp.publisher import confirmed_channel, enqueued_at, publish
from dualplane.core.settings import Settings
from tests.support.factories import unique_name

TIER_TTL_MS = 2000


@pytest.mark.unit
def test_the_newest_return_from_a_tier_wins_over_the_publish_stamp() -> None:
    returned = datetime(2026, 12, 7, 10, 0, 30, tzinfo=UTC)
    earlier = datetime(2026, 12, 7, 10, 0, 5, tzinfo=UTC)
    properties = pika.BasicProperties(
        timestamp=int(datetime(2026, 12, 7, 10, 0, tzinfo=UTC).timestamp()),
        headers={
            "x-death": [{"time": returned, "queue": "retry.30s"}, {"time": earlier, "queue": "retry.5s"}]
        },
    )
    assert enqueued_at(properties) == returned.timestamp()
    assert enqueued_at(pika.BasicProperties(timestamp=1_796_000_000)) == 1_796_000_000.0
    assert enqueued_at(pika.BasicProperties()) is None, "a message from elsewhere says nothing"
    assert enqueued_at(pika.BasicProperties(headers={"x-death": "not a list"}, timestamp=5)) == 5.0


@pytest.mark.integration
def test_a_published_message_and_one_back_from_a_ttl_tier_say_when_they_were_queued(
    settings: Settings,
) -> None:
    lane, tier = unique_name("lane"), unique_name("tier")
    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        channel.queue_declare(lane, auto_delete=True)
        # A retry tier as the topology makes one: a TTL, and dead-lettering back to the lane.
        arguments = {
            "x-message-ttl": TIER_TTL_MS,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": lane,
        }
        channel.queue_declare(tier, auto_delete=True, arguments=arguments)

        before = time.time()
        publish(channel, "", lane, b"first attempt")
        publish(channel, "", tier, b"retry")
        direct = _get(channel, lane, within_s=10)
        assert direct is not None
        stamped = enqueued_at(direct)
        assert stamped is not None and before - 1 <= stamped <= time.time() + 1

        returned = _get(channel, lane, within_s=60)
        assert returned is not None, "the tier never returned the message"
        back = enqueued_at(returned)
        # It entered the lane when the TTL ran out, not when it was published to the tier.
        assert back is not None
        assert back >= before + TIER_TTL_MS / 1000 - 1, back - before
        channel.queue_delete(tier)
        channel.queue_delete(lane)
    finally:
        connection.close()


def _get(channel: BlockingChannel, queue: str, within_s: float) -> pika.BasicProperties | None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        method, properties, _ = channel.basic_get(queue, auto_ack=True)
        if method is not None:
            return properties
        time.sleep(0.1)
    return None
