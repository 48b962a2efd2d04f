"""Publishing with publisher confirms: a call returns only once the broker has the message."""

from __future__ import annotations

from collections.abc import Mapping
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
    )
    return body, properties
