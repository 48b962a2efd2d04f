"""The fetcher's hand-off to the data plane: raw pages to ``pages.raw``, outcomes to ``fetch.events``.

``send`` returns only when Kafka has confirmed every message (idempotent producer, acks=all),
which is what lets the fetcher ack its RabbitMQ task. Memory stays bounded when Kafka is slow or
down: the producer's local queue is capped, and a full queue makes ``send`` wait (so the fetcher
stops pulling tasks) rather than buffer without limit. Delivery keeps trying for
``DUALPLANE_FETCH_HAND_OFF_TIMEOUT_S`` (30 s), long enough to ride out a broker restart; then the
message fails with :class:`HandOffFailed` and its task is requeued. ``send`` itself gives up a few
seconds later should the delivery report never come.

A producer can break in two ways, and is then replaced by a new one (new producer id) while the
old one is purged, its unconfirmed messages failing with :class:`HandOffFailed` so that their tasks
are requeued and fetched again (duplicates allowed, never lost):

- a *fatal* error (librdkafka's idempotent producer has one after some broker restarts:
  out-of-order sequence or unknown producer id, confluentinc/librdkafka#3584); it then refuses
  every later message, and each task would be requeued and fail again forever;
- a *stall*: a message not confirmed within the hand-off timeout. After a Kafka restart in the
  chaos crawl one fetcher's 32 hand-offs went unconfirmed, with no error at all, until librdkafka's
  5 min default timeout, while the other fetcher went on. librdkafka can leave a partition without
  a leader for good when a metadata update during a KRaft broker's start names none
  (confluentinc/librdkafka#5430): its messages then time out, and so would every later one to that
  partition. A new producer starts from fresh metadata.

Claim check: a body larger than ``DUALPLANE_FETCH_INLINE_BODY_MAX_BYTES`` is stored in S3 first
(:class:`~connectors.storage.claim_check.ClaimCheckStore`, content-addressed) and the raw page carries its
``claim_check`` reference with an empty body; only once S3 has the object is the page produced, so a
reference on ``pages.raw`` always names a stored body. Every raw page carries ``body_sha256`` and
``body_bytes`` (raw_page v2). S3 unavailable: :class:`HandOffFailed`, the task is requeued.

Keys: a raw page is keyed by its task's canonical URL, so every version of one URL lands in one
partition in fetch order; a fetch event is keyed by domain, so a domain's events stay in order for
the block-ratio processor.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import raw_page_max_message_bytes
from dualplane.connectors.storage.claim_check import ClaimCheckStore
from dualplane.connectors.storage.exceptions import ClaimCheckUnavailable
from dualplane.control_plane.fetcher.runner import HandOffFailed
from dualplane.core import metrics
from dualplane.core.settings import Settings
from dualplane.schemas.exceptions import RegistryUnavailable

log = logging.getLogger(__name__)
FATAL = "failed fatally"

LOCAL_QUEUE_KBYTES = 128 * 1024
REPORT_GRACE_S = 5.0  # past the delivery timeout, ``send`` stops waiting for a report that never came


class KafkaOutputs:
    """An idempotent producer with a poll thread; :meth:`send` awaits both confirmations."""

    def __init__(
        self,
        settings: Settings,
        new_producer: Callable[..., Producer] | None = None,
        claim_checks: ClaimCheckStore | None = None,
    ) -> None:
        self.settings = settings
        self.topics = settings.topics
        self.inline_body_max_bytes = settings.fetch.inline_body_max_bytes
        self.claim_checks = claim_checks or ClaimCheckStore.from_settings(settings.s3)
        self.codec = schemas.codec_for(settings)
        self._new_producer = new_producer or clients.producer
        self.hand_off_timeout_s = settings.fetch.hand_off_timeout_s
        self.report_grace_s = REPORT_GRACE_S
        self._broken: str | None = None  # why the current producer must be replaced, if it must
        self._swap_lock = threading.Lock()
        self.producers_replaced = 0
        self._produced_pages = metrics.PRODUCED.labels(self.topics.pages_raw)
        self._produced_events = metrics.PRODUCED.labels(self.topics.fetch_events)
        self.producer = self._create_producer()
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
            value = self._encode("raw_page", await self._placed_body(page), self.topics.pages_raw)
            deliveries.append(await self._produce(self.topics.pages_raw, str(page["url"]), value, trace))
        value = self._encode("fetch_event", event, self.topics.fetch_events)
        deliveries.append(await self._produce(self.topics.fetch_events, str(event["domain"]), value, trace))
        producer = self.producer
        try:
            await asyncio.wait_for(asyncio.gather(*deliveries), self.hand_off_timeout_s + self.report_grace_s)
        except TimeoutError:
            self._break(producer, "gave no delivery report")
            raise HandOffFailed(f"Kafka gave no delivery report in {self.hand_off_timeout_s:.0f} s") from None
        if page is not None:
            self._produced_pages.inc()
        self._produced_events.inc()

    def _encode(self, name: str, record: Mapping[str, Any], topic: str) -> bytes:
        # In registry mode only the first value per subject asks the registry; later ones use its cache.
        try:
            return self.codec.encode(name, record, topic=topic)
        except RegistryUnavailable as error:  # passing: the task is requeued and fetched again later
            raise HandOffFailed(str(error)) from error

    def _create_producer(self) -> Producer:
        return self._new_producer(
            self.settings.kafka,
            **{
                # A task waits for this (plus the broker's ack) before it is acked. 20 ms, not 5: messages
                # spread over the topics' partitions arrive far apart, so each woke librdkafka's broker
                # thread on its own (a write() made while holding the GIL) and went as its own request.
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "queue.buffering.max.kbytes": LOCAL_QUEUE_KBYTES,
                "message.max.bytes": raw_page_max_message_bytes(self.settings),
                "delivery.timeout.ms": int(self.hand_off_timeout_s * 1000),
                "error_cb": self._on_error,
            },
        )

    async def _placed_body(self, page: Mapping[str, Any]) -> dict[str, Any]:
        """``page`` with its body described, and moved to the claim-check store when too large."""
        body = bytes(page["body"])
        if len(body) <= self.inline_body_max_bytes:
            digest = hashlib.sha256(body).hexdigest()  # under a millisecond at the inline limit
            return {**page, "body_sha256": digest, "body_bytes": len(body), "claim_check": None}
        try:
            # S3 first, then Kafka: a reference is only ever published for a stored body.
            check = await asyncio.to_thread(self.claim_checks.put, body)
        except ClaimCheckUnavailable as error:
            raise HandOffFailed(f"could not claim-check the body of {page['url']}: {error}") from error
        return {
            **page,
            "body": b"",
            "claim_check": check.uri,
            "body_sha256": check.sha256,
            "body_bytes": check.size_bytes,
        }

    def _on_error(self, error: KafkaError) -> None:
        """librdkafka's error callback (poll thread): remember a fatal error; the rest it retries itself."""
        if error.fatal():
            self._broken = f"{FATAL} ({error})"

    def _break(self, producer: Producer, reason: str) -> None:
        """Have ``producer`` replaced before the next message, unless it has been already."""
        if producer is self.producer:
            self._broken = reason

    def _replace_if_broken(self) -> None:
        """Swap a broken producer for a new one; fail the old one's unconfirmed messages."""
        with self._swap_lock:
            reason, self._broken = self._broken, None
            if reason is None:
                return
            old, self.producer = self.producer, self._create_producer()
            self.producers_replaced += 1
        # A message unconfirmed past the hand-off timeout is a broker restarting: recovered here, nothing
        # lost, so a warning. A fatal error (fenced, say) is recovered too, but may recur: an error.
        level = logging.ERROR if reason.startswith(FATAL) else logging.WARNING
        log.log(level, "Kafka producer %s; replaced it. Its unconfirmed pages are fetched again.", reason)
        old.purge()  # in queue and in flight: each delivery report fails, so its task is requeued
        old.flush(5)  # serves those reports now (the poll thread only polls the new producer)

    def close(self, timeout_s: float = 30) -> None:
        self.producer.flush(timeout_s)
        self._running = False
        self._poller.join(timeout=5)

    async def _produce(
        self, topic: str, key: str, value: bytes, headers: list[tuple[str, str | bytes | None]]
    ) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        confirmed: asyncio.Future[None] = loop.create_future()

        while True:
            self._replace_if_broken()
            producer = self.producer

            def on_delivery(
                error: KafkaError | None, message: Message, producer: Producer = producer
            ) -> None:
                if error is not None and error.fatal():
                    self._break(producer, f"{FATAL} ({error})")
                elif error is not None and error.code() == KafkaError._MSG_TIMED_OUT:
                    self._break(producer, f"left a message unconfirmed for {self.hand_off_timeout_s:.0f} s")
                loop.call_soon_threadsafe(_settle, confirmed, error, topic)

            try:
                producer.produce(topic, value, key.encode(), headers=headers, on_delivery=on_delivery)
                return confirmed
            except BufferError:
                await asyncio.sleep(0.05)  # the local queue is full: Kafka is slow or down; wait
            except KafkaException as error:
                kafka_error = error.args[0] if error.args else None
                if isinstance(kafka_error, KafkaError) and kafka_error.fatal():
                    self._break(
                        producer, f"failed fatally ({kafka_error})"
                    )  # replaced before the next message
                raise HandOffFailed(f"Kafka refused a message to {topic}: {error}") from error

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
