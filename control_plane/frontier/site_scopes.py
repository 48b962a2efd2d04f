"""The scope half of every fetch profile, as a frontier sees it: followed from the profiles topic.

``dualplane profile set`` writes a profile (domain patterns, backend, ..., and a
:class:`~core.web.site_scope.SiteScope`) to the compacted ``fetch.profiles`` topic. Fetchers follow
it for how to fetch; a frontier follows it for how much to admit, reading only the ``domains`` and
``scope`` of each profile, so a change applies to the next URLs the frontier considers (about a
second), like a throttle override. The domain's profile is chosen by the one rule fetchers use
(:func:`~core.web.site_scope.most_specific`), remembered per domain as theirs is
(:class:`~core.web.site_scope.PatternBook`).

Settings: ``DUALPLANE_TOPIC_PROFILES``, ``DUALPLANE_KAFKA_*``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, KafkaException, Message, TopicPartition

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import watermarks
from dualplane.core.settings import KafkaSettings
from dualplane.core.web.site_scope import PatternBook, SiteScope

log = logging.getLogger(__name__)

POLL_S = 0.5
START_TIMEOUT_S = 15.0


class SiteScopes:
    """Each profile's domain patterns and scope, kept current by a thread; :meth:`scope` is thread-safe."""

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self.kafka, self.topic = kafka, topic
        self._book: PatternBook[SiteScope] = PatternBook()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._caught_up = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Follow the topic; wait (at most ``START_TIMEOUT_S``) until every stored profile is read."""
        clients.ensure_topics(self.kafka, [self.topic], partitions=1, config={"cleanup.policy": "compact"})
        self._thread = threading.Thread(target=self._follow, name="site-scopes", daemon=True)
        self._thread.start()
        if not self._caught_up.wait(START_TIMEOUT_S):
            log.warning("profiles topic %s not read to its end within %.0f s: scopes apply as they come",
                        self.topic, START_TIMEOUT_S)  # fmt: skip

    def scope(self, domain: str, profile: str | None = None) -> SiteScope | None:
        """The scope of ``domain``'s profile (``profile``, a job's, when it exists; else the one its
        patterns match); None: no profile, or one that limits nothing."""
        with self._lock:
            named = self._book.named(profile) if profile is not None else None
            found = named if named is not None else self._book.match(domain)
        return None if found is None or found.empty else found

    def put(self, name: str, domains: tuple[str, ...], scope: SiteScope) -> None:
        with self._lock:
            self._book.put(name, domains, scope)

    def remove(self, name: str) -> None:
        with self._lock:
            self._book.remove(name)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(START_TIMEOUT_S)

    def _follow(self) -> None:
        consumer = clients.consumer(self.kafka, f"{self.kafka.group_prefix}-scopes-{uuid.uuid4().hex[:8]}")
        try:
            partition = TopicPartition(self.topic, 0, OFFSET_BEGINNING)
            _, end = watermarks(consumer, partition, START_TIMEOUT_S)
            consumer.assign([partition])
            deadline = time.monotonic() + START_TIMEOUT_S
            while not self._stop.is_set():
                message = consumer.poll(POLL_S)
                if message is not None and message.error() is None:
                    self._apply(message)
                if self._caught_up.is_set():
                    continue
                # Offsets of a compacted topic have gaps: where the consumer stands says it is through.
                position = consumer.position([partition])[0].offset
                if end == 0 or position >= end or time.monotonic() > deadline:
                    self._caught_up.set()
        except KafkaException as error:  # the frontier goes on with the scopes it has
            log.warning("site scopes: stopped following %s (%s)", self.topic, error)
        finally:
            self._caught_up.set()
            consumer.close()

    def _apply(self, message: Message) -> None:
        key, value = message.key(), message.value()
        if key is None:
            return
        if value is None:
            self.remove(key.decode())
            return
        try:
            data = json.loads(value)
            self.put(key.decode(), tuple(data["domains"]), SiteScope.from_dict(data.get("scope", {})))
        except (ValueError, TypeError, KeyError) as error:  # the fetchers skip it too, with a warning
            log.warning(
                "site scopes: skipped profile %s at offset %s (%s)", key.decode(), message.offset(), error
            )
