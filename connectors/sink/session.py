"""One consumer session of the S3 sink: records in, files rotated and uploaded, offsets committed after.

The rules that make S3 hold every record exactly once (see also :mod:`connectors.sink.layout` and
:mod:`connectors.sink.upload`):

- Each consumed batch is prepared (:mod:`connectors.sink.prepare`: for WARC on worker threads), then
  handled on the session's thread in consumed order, so files, keys and commits are as with one thread.
- A partition has at most one open file. It is uploaded, and only then are the offsets it covers
  committed, before the next file of that partition can be uploaded: at any time at most one object
  per partition exists that is not covered by the committed offset, and its key is that offset. The
  upload runs on a worker thread (:mod:`connectors.sink.uploads`) while the session consumes on and
  builds the next files; its offsets are committed here, on the session's thread, once it has ended.
- A restart (crash, outage, rebalance) begins at the committed offset, so its first file has that same
  key. Creating it finds the key taken: the object there is adopted (its ``last-offset`` is committed)
  and the session starts over past it, instead of writing those records a second time.
- A record that cannot be archived is dead-lettered, with the reason, and counted as covered by the open
  file (or committed at once when none is open) only after Kafka confirmed the dead letter.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from dualplane import schemas
from dualplane.connectors.sink.base import FileStart, Sink
from dualplane.connectors.sink.exceptions import KeyTaken, SinkUnavailable, Unwritable
from dualplane.connectors.sink.layout import Layout
from dualplane.connectors.sink.prepare import Outcome, Preparer
from dualplane.connectors.sink.spool import OpenFile
from dualplane.connectors.sink.upload import ArchiveStore
from dualplane.connectors.sink.uploads import Partition, Uploads
from dualplane.core.settings import Settings

log = logging.getLogger(__name__)

BATCH = 500
POLL_S = 0.5
SETTLE_POLL_S = 0.05  # the longest wait for records while uploads are in flight: commit soon after each
POSITIONS_EVERY_S = 1.0
UPLOAD_THREADS = 4
PREPARE_THREADS = 3  # pages are prepared on these while the session writes: more than the 2 cores here
DEAD_LETTER_FLUSH_S = 30.0
REASON_MAX_CHARS = 2000


class StartOver(Exception):
    """An existing object was adopted and its offsets committed: begin again from the committed offsets."""


class Session:
    """Consumes the sinks' topics with one consumer until stopped; the caller closes the clients."""

    def __init__(
        self,
        settings: Settings,
        sinks: Iterable[Sink],
        store: ArchiveStore,
        *,
        layout: Layout,
        consumer: Consumer,
        producer: Producer,
        stopping: threading.Event,
        stats: Counter[str],
    ) -> None:
        self.settings = settings
        self.sinks = {sink.topic: sink for sink in sinks}
        self.store = store
        self.layout = layout
        self.consumer = consumer
        self.producer = producer
        self.stopping = stopping
        self.codec = schemas.codec_for(settings)
        self.files: dict[tuple[str, int], OpenFile] = {}
        self.failed_deliveries: list[str] = []
        self.unconfirmed = 0  # dead letters produced since the last flush
        self.committed: dict[tuple[str, int], int] = {}
        self.uploads = Uploads(store, threads=UPLOAD_THREADS)
        self.preparer = Preparer(self.sinks, threads=PREPARE_THREADS)
        self._positions_checked_s = time.monotonic()
        self.stats = (
            stats  # the service's, kept across sessions: files, records, bytes, dead_letters, adopted
        )

    def run(self) -> None:
        self.consumer.subscribe(list(self.sinks), on_revoke=self._revoked, on_lost=self._revoked)
        try:
            while not self.stopping.is_set():
                batch = [m for m in self.consumer.consume(BATCH, self._poll_s()) if _usable(m)]
                for message, outcome in self.preparer.prepared(batch):
                    self.handle(message, outcome)
                for partition in self.uploads.finished():
                    self._settle(partition)
                self._housekeeping()
            self._settle_all()  # stopped: commit what reached S3
        except StartOver:
            self._settle_all()  # Kafka answers: commit the other partitions' completed files too
            raise
        finally:
            # After a failure nothing more is committed: the next session adopts what was created.
            self.preparer.close()
            for upload in self.uploads.close():
                upload.file.discard()
            for open_file in self.files.values():
                open_file.discard()  # not uploaded, not committed: the next session writes it again
            self.files.clear()

    def handle(self, message: Message, item: Outcome) -> None:
        """Write ``message``'s prepared item to its partition's open file, or dead-letter it."""
        topic, partition, offset = message.topic() or "", message.partition() or 0, message.offset() or 0
        sink = self.sinks[topic]
        if isinstance(item, Unwritable):
            self._dead_letter(message, str(item))
            return
        record_time_ms = _record_time_ms(message)
        group = self.layout.group(item, record_time_ms)
        current = self.files.get((topic, partition))
        if current is not None and current.group != group:
            self.complete(topic, partition)
            current = None
        if current is None:
            key = self.layout.key(
                topic, partition, offset, extension=sink.extension, item=item, record_time_ms=record_time_ms
            )
            start = FileStart(topic, partition, offset, key, record_time_ms)
            current = OpenFile.open(sink, start, group, item, self.settings.sink.spool_dir)
            self.files[(topic, partition)] = current
        current.write(item, offset)
        if self.layout.full(current.records, current.size_bytes):
            self.complete(topic, partition)

    def complete(self, topic: str, partition: int) -> None:
        """Start uploading the partition's open file; its offsets are committed once it is in S3."""
        done = self.files.pop((topic, partition))
        try:
            size_bytes = done.finish()
            self._confirm_dead_letters()
            self._settle((topic, partition))  # its previous file first: one uncommitted object a partition
        except BaseException:
            done.discard()
            raise
        self.uploads.start((topic, partition), done, size_bytes)

    def _settle(self, partition: Partition) -> None:
        """Wait for the partition's upload, if any, then commit its file's offsets (or adopt the object)."""
        upload = self.uploads.take(partition)
        if upload is None:
            return
        done = upload.file
        try:
            try:
                upload.future.result()
            except KeyTaken:
                self._adopt(done)
            self._commit(done.start.topic, done.start.partition, done.last_offset + 1)
        finally:
            done.discard()
        self.stats["files"] += 1
        self.stats["records"] += done.records
        self.stats["bytes"] += upload.size_bytes
        log.info(
            "s3-sink: wrote s3://%s/%s (%d records, %d bytes)",
            self.store.bucket,
            done.start.key,
            done.records,
            upload.size_bytes,
        )

    def _settle_all(self) -> None:
        for partition in list(self.uploads.in_flight):
            self._settle(partition)

    def _adopt(self, done: OpenFile) -> None:
        metadata = self.store.metadata(done.start.key)
        last_offset = int(metadata.get("last-offset", "-1"))
        if last_offset < done.start.first_offset:
            raise SinkUnavailable(
                f"s3://{self.store.bucket}/{done.start.key} exists without dualplane's "
                "offset metadata; move it away so the sink can write its own"
            )
        log.warning(
            "s3-sink: s3://%s/%s already holds offsets %d-%d (written before a restart): adopted",
            self.store.bucket,
            done.start.key,
            done.start.first_offset,
            last_offset,
        )
        self._commit(done.start.topic, done.start.partition, last_offset + 1)
        self.stats["adopted"] += 1
        raise StartOver(done.start.key)

    def _poll_s(self) -> float:
        """How long to wait for records: until an upload may have ended or an open file becomes idle."""
        if self.uploads:
            return SETTLE_POLL_S
        idle_s = self.settings.sink.idle_flush_s
        if not idle_s or not self.files:
            return POLL_S
        due_s = min(f.touched_s for f in self.files.values()) + idle_s - time.monotonic()
        return min(POLL_S, max(SETTLE_POLL_S, due_s))

    def _housekeeping(self) -> None:
        """Write files idle for ``DUALPLANE_SINK_IDLE_FLUSH_S``; each second, commit past txn markers."""
        now = time.monotonic()
        idle_s = self.settings.sink.idle_flush_s
        for topic, partition in [
            tp
            for tp, f in self.files.items()
            if idle_s and now - f.touched_s >= idle_s and self._caught_up(*tp)
        ]:
            self.complete(topic, partition)
        if now - self._positions_checked_s >= POSITIONS_EVERY_S:
            self._positions_checked_s = now
            self._commit_positions()

    def _caught_up(self, topic: str, partition: int) -> bool:
        """Whether the partition was read to its end (as of the last fetch): only then does an idle
        flush cut a file. A partition merely slow to arrive (a loaded broker, a slow fetch) keeps its
        file open, so the boundary stays where the records put it and a re-run cuts the same files;
        only records appended after the end was reached fall into a new file. Unknown: caught up."""
        tp = TopicPartition(topic, partition)
        try:
            position = self.consumer.position([tp])[0].offset
            _low, high = self.consumer.get_watermark_offsets(tp, cached=True)
        except KafkaException:
            return True
        return position < 0 or high < 0 or position >= high

    def _commit_positions(self) -> None:
        """Commit the position of partitions with no open file, if past the last commit.

        Transaction markers take offsets but are never delivered, so after the last record of a
        transactional topic (``records``) the position is ahead of ``last offset + 1``; without this the
        group's lag would never reach zero. Safe: with no open file and no upload in flight, everything
        before the position is archived or dead-lettered and committed already.
        """
        for tp in self.consumer.position(self.consumer.assignment()):
            key = (tp.topic, tp.partition)
            idle = key not in self.files and key not in self.uploads
            if tp.offset >= 0 and idle and self.committed.get(key) != tp.offset:
                self._commit(tp.topic, tp.partition, tp.offset)

    def _dead_letter(self, message: Message, reason: str) -> None:
        topic, partition, offset = message.topic() or "", message.partition() or 0, message.offset() or 0
        log.warning("s3-sink: dead-lettering %s[%d]@%d: %s", topic, partition, offset, reason)
        letter: dict[str, Any] = {
            "source_topic": topic,
            "source_partition": partition,
            "source_offset": offset,
            "key": message.key(),
            "payload": message.value() or b"",
            "reason": reason[:REASON_MAX_CHARS],
            "stage": "sink",
            "failed_at": datetime.now(UTC),
            "job_id": None,
            "trace_id": None,
        }
        target = self.settings.topics.dead_letters
        value = self.codec.encode("dead_letter", letter, topic=target)
        self.producer.produce(target, value, message.key(), on_delivery=self._delivered)
        self.unconfirmed += 1
        self.stats["dead_letters"] += 1
        current = self.files.get((topic, partition))
        if current is not None:
            current.cover(offset)  # committed with the file, after the dead letter is confirmed
        else:
            self._settle((topic, partition))  # the file before it is committed first
            self._confirm_dead_letters()
            self._commit(topic, partition, offset + 1)

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.failed_deliveries.append(str(error))

    def _confirm_dead_letters(self) -> None:
        if not self.unconfirmed and not self.failed_deliveries:
            return  # nothing produced since the last confirmation: a flush would still cost a poll cycle
        left = self.producer.flush(DEAD_LETTER_FLUSH_S)
        self.unconfirmed = 0
        if left or self.failed_deliveries:
            problem = self.failed_deliveries[:1] or [f"{left} not confirmed"]
            self.failed_deliveries.clear()
            raise SinkUnavailable(f"dead letters not confirmed by Kafka ({problem[0]}); nothing committed")

    def _commit(self, topic: str, partition: int, next_offset: int) -> None:
        self.consumer.commit(offsets=[TopicPartition(topic, partition, next_offset)], asynchronous=False)
        self.committed[(topic, partition)] = next_offset

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            try:
                self._settle((tp.topic, tp.partition))  # still ours while revoking: commit what is in S3
            except Exception as error:  # StartOver included (committed); else the next owner adopts it
                log.info("s3-sink: %s[%d] handed over unsettled: %s", tp.topic, tp.partition, error)
            dropped = self.files.pop((tp.topic, tp.partition), None)
            if dropped is not None:
                dropped.discard()  # the partition's next owner writes it from the committed offset


def _record_time_ms(message: Message) -> int:
    kind, value = message.timestamp()
    return 0 if kind == TIMESTAMP_NOT_AVAILABLE or value < 0 else int(value)


def _usable(message: Message) -> bool:
    error = message.error()
    if error is None:
        return True
    if error.code() != KafkaError._PARTITION_EOF:
        log.warning("s3-sink: consumer error %s", error)
    return False
