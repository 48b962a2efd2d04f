"""The fetcher's hand-off to the data plane: raw pages to ``pages.raw``, outcomes to ``fetch.events``.

``send`` returns only when Kafka has confirmed every message (idempotent producer, acks=all),
which is what lets the fetcher ack its RabbitMQ task. Memory stays bounded when Kafka is slow or
down: the producer's local queue is capped, and a full queue makes ``send`` wait (so the fetcher
stops pulling tasks) rather than buffer without limit. Delivery keeps trying for
``DELIVERY_TIMEOUT_MS``, long enough to ride out a broker restart.

Keys: a raw page is keyed by its task's canonical URL, so every version of one URL lands in one
partition in fetch order; a fetch event is keyed by domain, so a domain's events stay in order for
the block-ratio processor.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

import schemas
from control_plane.fetch_control import HandOffFailed
from data_plane import kafka_clients
from dualplane.settings import Settings

DELIVERY_TIMEOUT_MS = 300_000
LOCAL_QUEUE_KBYTES = 128 * 1024


class KafkaOutputs:
    """An idempotent producer with a poll thread; :meth:`send` awaits both confirmations."""

    def __init__(self, settings: Settings, producer: Producer | None = None) -> None:
        self.topics = settings.topics
        self.producer = producer or kafka_clients.producer(
            settings.kafka,
            **{
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "queue.buffering.max.kbytes": LOCAL_QUEUE_KBYTES,
                "message.max.bytes": settings.limits.max_page_bytes + 64 * 1024,
                "delivery.timeout.ms": DELIVERY_TIMEOUT_MS,
            },
        )
        self._running = True
        self._poller = threading.Thread(target=self._poll, name="kafka-poll", daemon=True)
        self._poller.start()

    async def send(self, page: Mapping[str, Any] | None, event: Mapping[str, Any]) -> None:
        """Produce the page (if any) and the event; return once Kafka confirmed both."""
        deliveries = []
        trace: list[tuple[str, str | bytes | None]] = [
            ("trace_id", str(event["trace_id"]).encode()),
            ("job_id", str(event["job_id"]).encode()),
        ]
        if page is not None:
            value = schemas.encode("raw_page", page)
            deliveries.append(await self._produce(self.topics.pages_raw, str(page["url"]), value, trace))
        value = schemas.encode("fetch_event", event)
        deliveries.append(await self._produce(self.topics.fetch_events, str(event["domain"]), value, trace))
        await asyncio.gather(*deliveries)

    def close(self, timeout_s: float = 30) -> None:
        self.producer.flush(timeout_s)
        self._running = False
        self._poller.join(timeout=5)

    async def _produce(
        self, topic: str, key: str, value: bytes, headers: list[tuple[str, str | bytes | None]]
    ) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        confirmed: asyncio.Future[None] = loop.create_future()

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            loop.call_soon_threadsafe(_settle, confirmed, error, topic)

        while True:
            try:
                self.producer.produce(topic, value, key.encode(), headers=headers, on_delivery=on_delivery)
                return confirmed
            except BufferError:
                await asyncio.sleep(0.05)  # the local queue is full: Kafka is slow or down; wait

    def _poll(self) -> None:
        while self._running:
            self.producer.poll(0.1)


def _settle(future: asyncio.Future[None], error: KafkaError | None, topic: str) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(HandOffFailed(f"Kafka did not confirm a message to {topic}: {error}"))
