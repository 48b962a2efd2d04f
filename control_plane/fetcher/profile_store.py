"""Where profiles live: a compacted Kafka topic, one message per profile name (a tombstone deletes).

:func:`put` and :func:`delete` write it and wait for Kafka's acknowledgement (``profile set`` and
``profile delete``); :func:`read_profiles` reads it to its end (``profile show`` and ``list``).
:class:`ProfileView` is what a fetcher holds: it reads the topic to its end when it starts, then
keeps tailing it on a thread, so a profile set while the fleet runs applies to the next fetch of
its domains within about a second, and a fetcher started later starts with every profile.

Settings: ``DUALPLANE_TOPIC_PROFILES``, ``DUALPLANE_KAFKA_*``.
"""

from __future__ import annotations

import logging
import threading
import uuid

from confluent_kafka import OFFSET_BEGINNING, KafkaException, Message, TopicPartition

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.control_plane.fetcher.profiles import Profile, ProfileBook, ProfileError
from dualplane.core.settings import KafkaSettings

log = logging.getLogger(__name__)

TIMEOUT_S = 15.0
POLL_S = 0.5
TOPIC_CONFIG = {"cleanup.policy": "compact"}


class ProfileStoreError(ProfileError):
    """Kafka did not take or give the profiles; the message says what to check."""


def put(kafka: KafkaSettings, topic: str, profile: Profile) -> None:
    """Store ``profile`` under its name, replacing the one of that name."""
    _write(kafka, topic, profile.name, profile.to_json())


def delete(kafka: KafkaSettings, topic: str, name: str) -> None:
    """Remove profile ``name`` (a tombstone); a name that does not exist is no error."""
    _write(kafka, topic, name, None)


def read_profiles(kafka: KafkaSettings, topic: str, *, timeout_s: float = TIMEOUT_S) -> dict[str, Profile]:
    """Every profile in ``topic``, by name; an unreadable value is skipped with a warning."""
    book = ProfileBook()
    try:
        _ensure(kafka, topic)
        for message in read_to_end(kafka, topic, timeout_s=timeout_s):
            _apply(book, message)
    except (KafkaException, TimeoutError, RuntimeError) as error:
        raise ProfileStoreError(_unreachable(kafka, topic, error)) from error
    return book.profiles


class ProfileView:
    """The profiles of ``topic`` as they stand, kept current by a thread; :meth:`match` is thread-safe."""

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self.kafka, self.topic = kafka, topic
        self._book = ProfileBook()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Read every profile (blocking, at most ``TIMEOUT_S``), then follow the topic on a thread."""
        book = ProfileBook(read_profiles(self.kafka, self.topic).values())
        with self._lock:
            self._book = book
        log.info("fetch profiles: %d from %s", len(book.profiles), self.topic)
        self._thread = threading.Thread(target=self._follow, name="profiles", daemon=True)
        self._thread.start()

    def match(self, domain: str) -> Profile | None:
        with self._lock:
            return self._book.match(domain)

    def named(self, name: str) -> Profile | None:
        with self._lock:
            return self._book.named(name)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(TIMEOUT_S)

    def _follow(self) -> None:
        # From the beginning again: cheap for a handful of messages, and nothing between the first
        # read and this consumer's start is missed.
        consumer = clients.consumer(self.kafka, f"{self.kafka.group_prefix}-profiles-{uuid.uuid4().hex[:8]}")
        try:
            consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            while not self._stop.is_set():
                message = consumer.poll(POLL_S)
                if message is None or message.error() is not None:
                    continue
                with self._lock:
                    _apply(self._book, message)
        except KafkaException as error:  # the fetcher goes on with the profiles it has
            log.warning("fetch profiles: stopped following %s (%s)", self.topic, error)
        finally:
            consumer.close()


def _apply(book: ProfileBook, message: Message) -> None:
    key, value = message.key(), message.value()
    if key is None:
        return
    if value is None:
        book.remove(key.decode())
        return
    try:
        book.put(Profile.from_json(value))
    except ProfileError as error:
        log.warning("skipped profile %s at offset %s: %s", key.decode(), message.offset(), error)


def _write(kafka: KafkaSettings, topic: str, name: str, value: bytes | None) -> None:
    try:
        _ensure(kafka, topic)
        why = clients.produce_acked(kafka, topic, name.encode(), value, TIMEOUT_S)
    except (KafkaException, RuntimeError) as error:
        raise ProfileStoreError(_unreachable(kafka, topic, error)) from error
    if why is not None:
        raise ProfileStoreError(
            f"Kafka at {kafka.bootstrap_servers} did not take profile {name} ({why}); "
            "is Kafka up (`dualplane stack status`)?"
        )


def _ensure(kafka: KafkaSettings, topic: str) -> None:
    clients.ensure_topics(kafka, [topic], partitions=1, config=TOPIC_CONFIG, timeout_s=TIMEOUT_S)


def _unreachable(kafka: KafkaSettings, topic: str, error: BaseException) -> str:
    return (
        f"could not reach the profiles topic {topic!r} on Kafka at {kafka.bootstrap_servers} ({error}); "
        "is Kafka up (`dualplane stack status`) and DUALPLANE_KAFKA_BOOTSTRAP_SERVERS right?"
    )
