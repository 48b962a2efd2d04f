"""Dead letters: why a message failed, where it came from, and how to send it back.

A consumer dead-letters a message by publishing it unchanged to the dead-letter exchange with
``x-dualplane-*`` headers (reason, source queue, original exchange and routing key). The broker
dead-letters too (delivery limit exceeded); then the reason and origin come from ``x-death``.
``redrive`` republishes to the original exchange and routing key, with publisher confirms, and
only then removes the dead letter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp.publisher import publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.json_bounds import loads_bounded

REASON = "x-dualplane-reason"
SOURCE_QUEUE = "x-dualplane-source-queue"
ORIGINAL_EXCHANGE = "x-dualplane-exchange"
ORIGINAL_ROUTING_KEY = "x-dualplane-routing-key"
FAILED_AT = "x-dualplane-failed-at"
REDRIVES = "x-dualplane-redrives"


@dataclass(frozen=True)
class DeadLetter:
    """One message in the dead-letter queue, as ``dlq list`` shows it."""

    reason: str
    source_queue: str
    exchange: str
    routing_key: str
    failed_at: str
    job_id: str | None
    kind: str | None
    redrives: int
    body_preview: str
    url: str | None = None  # the message's page, when it names one (crawl tasks, discovered URLs)

    @classmethod
    def parse(cls, properties: pika.BasicProperties, body: bytes) -> DeadLetter:
        headers = dict(properties.headers or {})
        death = _first_death(headers)
        fields = _json_fields(body)
        return cls(
            reason=str(headers.get(REASON) or _broker_reason(death)),
            source_queue=str(headers.get(SOURCE_QUEUE) or death.get("queue", "")),
            exchange=str(headers.get(ORIGINAL_EXCHANGE, death.get("exchange", ""))),
            routing_key=str(headers.get(ORIGINAL_ROUTING_KEY) or _first(death.get("routing-keys")) or ""),
            failed_at=str(headers.get(FAILED_AT) or death.get("time", "")),
            job_id=fields.get("job_id") if isinstance(fields.get("job_id"), str) else None,
            kind=fields.get("kind") if isinstance(fields.get("kind"), str) else None,
            redrives=int(headers.get(REDRIVES, 0)),
            body_preview=body[:200].decode("utf-8", "replace"),
            url=fields.get("url") if isinstance(fields.get("url"), str) else None,
        )


def dead_letter(
    channel: BlockingChannel,
    topology: Topology,
    body: bytes,
    properties: pika.BasicProperties | None,
    *,
    reason: str,
    source_queue: str,
    exchange: str,
    routing_key: str,
) -> None:
    """Publish ``body`` to the dead letters with its reason and origin (confirmed if ``channel`` is)."""
    headers = dict((properties.headers if properties else None) or {})
    headers.update(
        {
            REASON: reason[:2000],
            SOURCE_QUEUE: source_queue,
            ORIGINAL_EXCHANGE: exchange,
            ORIGINAL_ROUTING_KEY: routing_key,
            FAILED_AT: datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    content_type = properties.content_type if properties else None
    publish(channel, topology.dead_exchange, "", body, headers=headers, content_type=content_type)


def browse(
    channel: BlockingChannel, topology: Topology, limit: int = 1000
) -> list[tuple[int, pika.BasicProperties, bytes]]:
    """Up to ``limit`` dead letters, held unacked on ``channel`` (settle or close it afterwards)."""
    held: list[tuple[int, pika.BasicProperties, bytes]] = []
    while len(held) < limit:
        method, properties, body = channel.basic_get(topology.dead_queue, auto_ack=False)
        if method is None:
            break
        held.append((method.delivery_tag, properties, body))
    return held


def list_dead_letters(channel: BlockingChannel, topology: Topology, limit: int = 1000) -> list[DeadLetter]:
    """Read up to ``limit`` dead letters without removing any."""
    held = browse(channel, topology, limit)
    if held:
        channel.basic_nack(held[-1][0], multiple=True, requeue=True)
    return [DeadLetter.parse(properties, body) for _tag, properties, body in held]


def redrive(
    channel: BlockingChannel,
    topology: Topology,
    matches: Callable[[DeadLetter], bool],
    limit: int = 10_000,
) -> tuple[int, int]:
    """Send matching dead letters back where they came from; return (redriven, left)."""
    held = browse(channel, topology, limit)
    redriven = 0
    for tag, properties, body in held:
        letter = DeadLetter.parse(properties, body)
        if not matches(letter) or (not letter.routing_key and not letter.exchange):
            channel.basic_nack(tag, requeue=True)
            continue
        headers = {k: v for k, v in (properties.headers or {}).items() if not k.startswith("x-")}
        headers[REDRIVES] = letter.redrives + 1
        publish(channel, letter.exchange, letter.routing_key, body, headers=headers)
        channel.basic_ack(tag)  # only after the broker confirmed the republished copy
        redriven += 1
    return redriven, len(held) - redriven


def _first_death(headers: dict[str, Any]) -> dict[str, Any]:
    deaths = headers.get("x-death")
    if isinstance(deaths, list) and deaths and isinstance(deaths[0], dict):
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in deaths[0].items()}
    return {}


def _broker_reason(death: dict[str, Any]) -> str:
    if not death:
        return "unknown (no reason recorded)"
    reason = death.get("reason", "?")
    if reason == "delivery_limit":
        return "redelivered past the delivery limit (the consumer crashed or timed out on it repeatedly)"
    return f"dead-lettered by the broker: {reason}"


def _first(value: Any) -> str | None:
    if isinstance(value, list) and value:
        first = value[0]
        return first.decode() if isinstance(first, bytes) else str(first)
    return None


def _json_fields(body: bytes) -> dict[str, Any]:
    try:
        fields = loads_bounded(body)  # a dead letter may be the deeply nested poison that got it there
    except (UnicodeDecodeError, ValueError):
        return {}
    return fields if isinstance(fields, dict) else {}
