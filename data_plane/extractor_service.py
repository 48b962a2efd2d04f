"""The extractor service: ``pages.raw`` in; links to the frontier, failures to Kafka dead letters.

For every raw page: decode the envelope, decode the body with its charset, extract the links and
publish each as a discovered URL (depth + 1) to RabbitMQ with publisher confirms. Offsets are
committed only after the links are confirmed, so a crash re-reads the page and re-publishes its
links (the frontier's dedup absorbs the repeats): nothing is lost. A page that cannot be decoded
goes to the Kafka dead-letter topic with the reason and its source topic/partition/offset, and
the service moves on. Links marked ``nofollow`` (by ``rel`` or the page's robots meta) are not
followed.

Settings: ``DUALPLANE_TOPIC_PAGES_RAW``, ``DUALPLANE_TOPIC_DEAD_LETTERS``, ``DUALPLANE_QUEUE_DISCOVERY``.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pika
from confluent_kafka import Consumer, KafkaError, Message, Producer

import schemas
from control_plane import amqp
from control_plane.messages import DiscoveredUrl
from control_plane.publisher import confirmed_channel, publish
from control_plane.topology import Topology
from data_plane import kafka_clients
from data_plane.extract.links import extract_links
from data_plane.topics import ensure_data_plane_topics
from dualplane.settings import Settings

log = logging.getLogger(__name__)

COMMIT_EVERY_S = 1.0


class Extractor:
    """One extractor process; run several in one consumer group to share the partitions."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.group_id = f"{settings.kafka.group_prefix}-extractor"
        self.topology = Topology(settings.queues)
        self._stop = threading.Event()
        self.pages = 0
        self.links = 0
        self.dead_lettered = 0

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        """Nothing to release between runs: ``run`` closes its clients when it returns."""

    def run(self) -> None:
        """Consume until stopped; after any failure start over from the committed offsets."""
        ensure_data_plane_topics(self.settings)
        while not self._stop.is_set():
            try:
                self._run_once()
            except Exception:
                log.exception("extractor: failure; resuming from the committed offsets in 2 s")
                self._stop.wait(2.0)

    def _run_once(self) -> None:
        # Offsets are stored by hand after the hand-off, then committed: never ahead of the work.
        consumer = kafka_clients.consumer(
            self.settings.kafka, self.group_id, **{"enable.auto.offset.store": False}
        )
        dead_letters = kafka_clients.producer(self.settings.kafka)
        connection = amqp.connect(self.settings.amqp)
        try:
            channel = confirmed_channel(connection)
            self.topology.declare(channel)
            consumer.subscribe([self.settings.topics.pages_raw])
            self._consume(consumer, channel, connection, dead_letters)
        finally:
            consumer.close()  # commits nothing: offsets are committed explicitly after hand-off
            dead_letters.flush(30)
            if connection.is_open:
                connection.close()

    def _consume(
        self,
        consumer: Consumer,
        channel: Any,
        connection: pika.BlockingConnection,
        dead_letters: Producer,
    ) -> None:
        last_commit = time.monotonic()
        pending = False
        while not self._stop.is_set():
            message = consumer.poll(0.5)
            connection.process_data_events(0)  # keep the AMQP heartbeat alive while idle
            if message is not None:
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        log.warning("extractor: consumer error %s", error)
                    continue
                self._handle(message, channel, dead_letters)
                consumer.store_offsets(message)
                pending = True
            if pending and time.monotonic() - last_commit >= COMMIT_EVERY_S:
                _flush_or_raise(dead_letters)
                consumer.commit(asynchronous=False)
                last_commit, pending = time.monotonic(), False
        if pending:
            _flush_or_raise(dead_letters)
            consumer.commit(asynchronous=False)

    def _handle(self, message: Message, channel: Any, dead_letters: Producer) -> None:
        try:
            page = schemas.decode(message.value() or b"").record
            html = page["body"].decode(page.get("charset") or "utf-8", errors="replace")
            links = extract_links(html, page["final_url"] or page["url"])
        except Exception as error:  # bad bytes must not stop the service: dead-letter them
            self._dead_letter(message, dead_letters, f"{type(error).__name__}: {error}", "decode")
            return
        followed = [link for link in links if not link.nofollow]
        for link in followed:
            found = DiscoveredUrl(
                job_id=page["job_id"],
                url=link.url,
                depth=int(page["depth"]) + 1,
                source_url=page["final_url"] or page["url"],
            )
            publish(channel, self.topology.discovery_exchange, "", found)
        self.pages += 1
        self.links += len(followed)

    def _dead_letter(self, message: Message, producer: Producer, reason: str, stage: str) -> None:
        log.warning("extractor: dead-lettering %s[%s]@%s: %s", message.topic(), message.partition(),
                    message.offset(), reason)  # fmt: skip
        record: dict[str, Any] = {
            "source_topic": message.topic(),
            "source_partition": message.partition(),
            "source_offset": message.offset(),
            "key": message.key(),
            "payload": message.value() or b"",
            "reason": reason[:2000],
            "stage": stage,
            "failed_at": datetime.now(UTC),
            "job_id": None,
            "trace_id": None,
        }
        producer.produce(
            self.settings.topics.dead_letters, schemas.encode("dead_letter", record), message.key()
        )
        self.dead_lettered += 1


def _flush_or_raise(producer: Producer) -> None:
    if producer.flush(60) != 0:
        raise RuntimeError("Kafka did not confirm dead letters within 60 s; not committing offsets")
