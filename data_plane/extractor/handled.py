"""Each page extracted once: the (job, URL, task) keys the extractor has handled, kept in Kafka.

Why. A fetcher acks its task only after Kafka confirmed the raw page; a fetcher that dies between
the two leaves the task to be fetched again, and ``pages.raw`` then holds the page twice (as it
may after a hand-off that timed out but was written). Records must not: downstream should not have
to deduplicate, and a job's counts would be wrong. So the extractor deduplicates, inside the
transaction that already makes its output exactly once, rather than leaving it to an idempotent
record key that every consumer would have to honour (and that a ``read_committed`` reader would
still see twice).

What is a copy. The same task fetched again: a task redelivered or retried keeps its id, so its
copies share the key. A revisit of the URL (a monitor coming back, a job seeding the URL anew) is
a new task, so a new page with its own record: the key is a 16-byte hash of the job id, the URL and
the task id (before monitors, of the job id and URL only, which dropped every revisit in a job).

How. Every page handled (a record or a dead letter made) adds its key to the compacted topic
``DUALPLANE_TOPIC_EXTRACTED``, in the same Kafka transaction as the record and the consumed
offsets, and to the partition with the page's own ``pages.raw`` partition number: a raw page is
keyed by its URL, so every copy of a page lands in one partition, owned by one extractor at a
time. Before handling the first page of a partition it was assigned, an extractor reads that
partition's keys to the end (``read_committed``, so exactly what was committed with the offsets it
resumes from); a page whose key is there, or was added earlier in the open transaction, is skipped.
An aborted transaction forgets its keys with its records.

Bounds. Keys are kept ``DUALPLANE_TOPIC_EXTRACTED_RETENTION_MS`` (7 days; compaction keeps one per
page meanwhile): a copy arriving later than that is extracted again. In memory, about 100 bytes
per page of the partitions an extractor owns within that time (a million pages: ~100 MB).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable

from confluent_kafka import Producer
from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.core.settings import Settings

log = logging.getLogger(__name__)

KEY_BYTES = 16
# A killed extractor's open transaction holds read_committed reads until its timeout (60 s).
LOAD_IDLE_S = 90.0


def page_key(job_id: str, url: str, task_id: str) -> bytes:
    """The key of one page of one job, fetched by one task (its copies share it, its revisits do not)."""
    return hashlib.blake2b(f"{job_id}\n{url}\n{task_id}".encode(), digest_size=KEY_BYTES).digest()


class HandledPages:
    """The handled keys of the partitions this extractor owns, and those of its open transaction."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topic = settings.topics.extracted
        self._committed: dict[int, set[bytes]] = {}
        self._pending: dict[int, set[bytes]] = {}

    def prepare(self) -> None:
        """Give the topic at least as many partitions as ``pages.raw`` (created by prepare_data_plane)."""
        admin = clients.admin(self.settings.kafka)
        metadata = admin.list_topics(timeout=30).topics
        wanted = len(metadata[self.settings.topics.pages_raw].partitions)
        if len(metadata[self.topic].partitions) < wanted:
            for future in admin.create_partitions([NewPartitions(self.topic, wanted)]).values():
                future.result()

    def forget(self, partitions: Iterable[int] | None = None) -> None:
        """Drop what is known of ``partitions`` (all by default): another extractor may own them now."""
        for partition in list(self._committed) if partitions is None else partitions:
            self._committed.pop(partition, None)
        self._pending.clear()

    def load(self, partitions: Iterable[int]) -> None:
        """Read the committed keys of each of ``partitions`` not known yet (before a transaction)."""
        for partition in sorted(set(partitions) - set(self._committed)):
            keys = {
                message.key() or b""
                for message in read_to_end(
                    self.settings.kafka, self.topic, timeout_s=LOAD_IDLE_S, partitions=[partition]
                )
            }
            self._committed[partition] = keys
            log.info("extractor: %d pages already handled in partition %d", len(keys), partition)

    def seen(self, partition: int, key: bytes) -> bool:
        return key in self._committed.get(partition, ()) or key in self._pending.get(partition, ())

    def add(self, producer: Producer, partition: int, key: bytes, offset: int) -> None:
        """Record ``key`` in the open transaction of ``producer`` (value: the page's source offset)."""
        producer.produce(self.topic, offset.to_bytes(8, "big"), key, partition=partition)
        self._pending.setdefault(partition, set()).add(key)

    def committed(self) -> None:
        """The open transaction committed: its keys are durable."""
        for partition, keys in self._pending.items():
            self._committed.setdefault(partition, set()).update(keys)
        self._pending.clear()

    def aborted(self) -> None:
        self._pending.clear()
