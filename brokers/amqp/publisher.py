"""Publishing with publisher confirms: a call returns only once the broker has the message.

Every message carries the time it was published (the AMQP ``timestamp`` property, whole seconds):
:func:`enqueued_at` reads when a message entered the queue it was delivered from, which is how the
fetchers measure how long tasks wait in their lanes (quorum queues report no head-message age).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp.messages import CONTENT_TYPE, ControlMessage


def confirmed_channel(connection: pika.BlockingConnection) -> BlockingChannel:
    """A new channel in confirm mode: ``basic_publish`` raises unless the broker confirmed."""
    channel = connection.channel()
    channel.confirm_delivery()
    return channel


def publish(
    channel: BlockingChannel,
    exchange: str,
    routing_key: str,
    message: ControlMessage | bytes,
    *,
    headers: Mapping[str, Any] | None = None,
    mandatory: bool = True,
    content_type: str | None = CONTENT_TYPE,
    message_id: str | None = None,
) -> None:
    """Publish a persistent message; on a confirm channel, raises ``UnroutableError`` or
    ``NackError`` when the broker did not take it, so callers never ack what was not handed on."""
    body, properties = encoded(message, headers=headers, content_type=content_type, message_id=message_id)
    channel.basic_publish(exchange, routing_key, body, properties=properties, mandatory=mandatory)


def encoded(
    message: ControlMessage | bytes,
    *,
    headers: Mapping[str, Any] | None = None,
    content_type: str | None = CONTENT_TYPE,
    message_id: str | None = None,
) -> tuple[bytes, pika.BasicProperties]:
    """The body and properties :func:`publish` sends: persistent, typed by the message's kind."""
    body = message.encode() if isinstance(message, ControlMessage) else message
    properties = pika.BasicProperties(
        delivery_mode=pika.DeliveryMode.Persistent,
        content_type=content_type,
        headers=dict(headers) if headers else None,
        type=message.kind if isinstance(message, ControlMessage) else None,
        message_id=message_id,
        timestamp=int(time.time()),
    )
    return body, properties


def enqueued_at(properties: pika.BasicProperties) -> float | None:
    """When the message entered the queue it came from (epoch seconds), or None when it does not say.

    A message that came back through a retry tier has RabbitMQ's ``x-death`` header, whose newest
    entry (first) says when it left the tier for its queue; any other, its publish timestamp.
    """
    deaths = (properties.headers or {}).get("x-death")
    if isinstance(deaths, list) and deaths and isinstance(deaths[0], dict):
        died = deaths[0].get("time")
        if isinstance(died, datetime):  # pika decodes AMQP timestamps as naive UTC datetimes
            return (died if died.tzinfo else died.replace(tzinfo=UTC)).timestamp()
    stamp = properties.timestamp
    return float(stamp) if isinstance(stamp, int) and stamp > 0 else None
