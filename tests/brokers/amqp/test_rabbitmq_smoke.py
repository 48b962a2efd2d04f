"""RabbitMQ smoke tests: quorum queues, publisher confirms, manual acks and redelivery."""

from __future__ import annotations

import httpx
import pika
import pytest

from dualplane.brokers import amqp
from dualplane.core.settings import Settings
from tests.support.factories import AmqpQueueFactory

pytestmark = pytest.mark.integration


def _queue_info(settings: Settings, queue: str) -> dict[str, object]:
    credentials = amqp.connection_parameters(settings.amqp).credentials
    response = httpx.get(
        f"{settings.amqp.management_url}/api/queues/%2F/{queue}",
        auth=(credentials.username, credentials.password),
        timeout=10,
    )
    response.raise_for_status()
    return dict(response.json())


def test_queue_is_a_durable_quorum_queue(settings: Settings, amqp_queues: AmqpQueueFactory) -> None:
    queue = amqp_queues.create("quorum")

    info = _queue_info(settings, queue)

    assert info["type"] == "quorum"
    assert info["durable"] is True


def test_confirmed_publish_then_manual_ack_consume(settings: Settings, amqp_queues: AmqpQueueFactory) -> None:
    queue = amqp_queues.create("confirm")
    channel = amqp_queues.channel
    channel.confirm_delivery()
    bodies = [f"task-{i}".encode() for i in range(50)]
    for body in bodies:
        channel.basic_publish("", queue, body, properties=amqp.persistent(), mandatory=True)

    received = []
    for method, _properties, body in channel.consume(queue, inactivity_timeout=10):
        assert method is not None, "timed out waiting for confirmed messages"
        channel.basic_ack(method.delivery_tag)
        received.append(body)
        if len(received) == len(bodies):
            break
    channel.cancel()

    assert received == bodies
    assert channel.queue_declare(queue, passive=True).method.message_count == 0


def test_unacked_message_is_redelivered_after_consumer_dies(
    settings: Settings, amqp_queues: AmqpQueueFactory
) -> None:
    queue = amqp_queues.create("redeliver")
    amqp_queues.channel.basic_publish("", queue, b"survivor", properties=amqp.persistent())
    doomed = amqp.connect(settings.amqp)
    doomed_channel = doomed.channel()
    method, _properties, body = next(doomed_channel.consume(queue, inactivity_timeout=10))
    assert body == b"survivor" and method is not None
    doomed.close()  # the consumer goes away without acking

    method, _properties, body = amqp_queues.channel.basic_get(queue, auto_ack=False)

    assert body == b"survivor"
    assert method is not None and method.redelivered is True
    amqp_queues.channel.basic_ack(method.delivery_tag)


def test_unroutable_mandatory_publish_is_refused(amqp_queues: AmqpQueueFactory) -> None:
    channel = amqp_queues.channel
    channel.confirm_delivery()

    with pytest.raises(pika.exceptions.UnroutableError):
        channel.basic_publish("", "test-no-such-queue-anywhere", b"lost?", mandatory=True)
