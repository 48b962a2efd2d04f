"""The latest record per URL and its change events, written in the extractor's transactions.

What. Every record the extractor makes is also written to the compacted topic
``DUALPLANE_TOPIC_RECORDS_LATEST`` (the same bytes: same schema, same codec), keyed by the page's URL
in the frontier's canonical form (the key of ``pages.raw``). When the record's watched values differ
from those of the URL's previous record, a ``change_event`` goes to ``DUALPLANE_TOPIC_CHANGES``
(:mod:`~data_plane.extractor.changes` says what is watched). Both are produced in the transaction
of the record and the consumed offsets, so both are exactly once with it.

State (the Kafka Streams pattern of a table restored from its changelog). ``records.latest`` is
partitioned like ``pages.raw``: the record of a page read from ``pages.raw`` partition ``i`` goes
to partition ``i`` (explicitly, whatever the partitioner), and all copies of a URL are in one
``pages.raw`` partition, owned by one extractor at a time. So an extractor needs the previous
state of the partitions it owns only: before the first page of a partition, it reads that
partition of ``records.latest`` to its end (``read_committed``: exactly what was committed with the
offsets it resumes from) into a map URL -> :class:`~data_plane.extractor.changes.Snapshot`. What
the open transaction wrote is kept apart and merged only when it commits; an abort drops it, and
a revoked or lost partition is forgotten (its next owner restores it from Kafka).

Bounds. A few hundred bytes of memory per URL of the owned partitions. Restoring reads whole
records (text and links too), about the size of a record per URL; compaction keeps that to one
record per URL plus the segment being written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Producer

from dualplane import schemas
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import copartition
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor.changes import Snapshot, change_event

log = logging.getLogger(__name__)

# A killed extractor's open transaction holds read_committed reads until its timeout (60 s).
LOAD_IDLE_S = 90.0


class LatestState:
    """The URL -> snapshot maps of the owned partitions, and what the open transaction wrote."""

    def __init__(self, settings: Settings, codec: schemas.Codec) -> None:
        self.settings = settings
        self.codec = codec
        self.topic = settings.topics.records_latest
        self.changes_topic = settings.topics.changes
        self._committed: dict[int, dict[str, Snapshot]] = {}
        self._pending: dict[int, dict[str, Snapshot]] = {}
        self._pending_changes = 0
        self.changes = 0  # change events committed by this process

    def prepare(self) -> None:
        """Give ``records.latest`` at least as many partitions as ``pages.raw``."""
        copartition(self.settings, self.topic)

    def forget(self, partitions: Iterable[int] | None = None) -> None:
        """Drop what is known of ``partitions`` (all by default): another extractor may own them now."""
        for partition in list(self._committed) if partitions is None else partitions:
            self._committed.pop(partition, None)
        self.aborted()

    def load(self, partitions: Iterable[int]) -> None:
        """Restore each of ``partitions`` not known yet from ``records.latest`` (before a transaction)."""
        for partition in sorted(set(partitions) - set(self._committed)):
            state: dict[str, Snapshot] = {}
            messages = read_to_end(
                self.settings.kafka, self.topic, timeout_s=LOAD_IDLE_S, partitions=[partition]
            )
            for message in messages:
                url, value = (message.key() or b"").decode(), message.value()
                if value is None:  # a tombstone: the URL was deleted from the table
                    state.pop(url, None)
                else:
                    state[url] = Snapshot.of(self.codec.decode(value).record)
            self._committed[partition] = state
            log.info("extractor: latest state of %d URL(s) restored for partition %d", len(state), partition)

    def previous(self, partition: int, url: str) -> Snapshot | None:
        pending = self._pending.get(partition, {})
        return pending[url] if url in pending else self._committed.get(partition, {}).get(url)

    def write(
        self, producer: Producer, partition: int, url: str, record: Mapping[str, Any], value: bytes
    ) -> bool:
        """Produce ``record`` (encoded as ``value``) to ``records.latest`` and its change event, if any,
        in the open transaction of ``producer``; whether an event was produced.

        A record fetched before the URL's latest one (two fetches of a URL racing) changes nothing:
        the table keeps the newest page, and an event never goes back in time.
        """
        current, previous = Snapshot.of(record), self.previous(partition, url)
        if previous is not None and current.fetched_at < previous.fetched_at:
            log.info("extractor: %s fetched at %s is older than its latest record; latest kept",
                     url, current.fetched_at)  # fmt: skip
            return False
        producer.produce(self.topic, value, url.encode(), partition=partition)
        self._pending.setdefault(partition, {})[url] = current
        event = change_event(url, previous, current, record) if previous is not None else None
        if event is None:
            return False
        encoded = self.codec.encode("change_event", event, topic=self.changes_topic)
        producer.produce(self.changes_topic, encoded, url.encode())
        self._pending_changes += 1
        return True

    def committed(self) -> int:
        """The open transaction committed: its snapshots are the state now. The change events it had."""
        for partition, snapshots in self._pending.items():
            self._committed.setdefault(partition, {}).update(snapshots)
        committed, self._pending_changes = self._pending_changes, 0
        self._pending.clear()
        self.changes += committed
        return committed

    def aborted(self) -> None:
        self._pending.clear()
        self._pending_changes = 0
