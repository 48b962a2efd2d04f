"""A replay worker: reads ranges of ``pages.raw``, extracts each page, produces its record.

What runs in each process of a replay (:mod:`data_plane.extractor.replay` plans the ranges and
shares them out): one Kafka consumer and one idempotent producer for all the ranges it is given,
read in batches, flushed once. A claim-checked body is read back from S3 first (retried a few
times: S3 down stops the replay, saying where to resume); a page that cannot be extracted is
counted as failed (the live extractor dead-letters these).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.util import Finalize
from typing import Any

from confluent_kafka import Message, TopicPartition

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import Settings
from dualplane.schemas.exceptions import RegistryError

ProgressCallback = Callable[[int], None]

BATCH_MESSAGES = 50  # small: extraction starts with the first pages while the rest are fetched
STALL_S = 30.0  # a partition that yields nothing for this long, short of its end, fails the replay
STORE_ATTEMPTS = 4  # reads of one claim check before S3 is declared down (boto3 retries each, too)


class ReplayError(DualplaneError):
    """A replay that cannot run as asked (an unknown topic, an empty or inverted range…)."""


@dataclass(frozen=True)
class PartitionRange:
    partition: int
    start: int  # first offset to read
    end: int  # one past the last offset to read

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True)
class ReplayJob:
    """What every range of one replay is turned into."""

    schema_version: int
    to_topic: str


def replay_here(
    settings: Settings, ranges: list[PartitionRange], job: ReplayJob, progress: ProgressCallback
) -> dict[str, int]:
    """Replay ``ranges`` in this process; the counts (pages, records, failed, cpu_ms)."""
    with contextlib.closing(ReplayWorker(settings, progress)) as worker:
        return worker.replay(ranges, job)


class ReplayWorker:
    """Reads ranges of ``pages.raw``, extracts, produces: one consumer and one producer throughout."""

    def __init__(self, settings: Settings, progress: ProgressCallback) -> None:
        from dualplane.connectors.storage.claim_check import ClaimCheckStore  # noqa: PLC0415 (preloaded by the fork server)
        from dualplane.data_plane.extract.plugins import ExtractorChoice  # noqa: PLC0415 (heavy: loaded on use)
        from dualplane.data_plane.extract.record import Extraction  # noqa: PLC0415

        self.settings = settings
        self.progress = progress
        self.extract = Extraction(ExtractorChoice(settings.extract.extractor_by_domain))
        self.bodies = ClaimCheckStore.from_settings(settings.s3)
        self.codec = schemas.codec_for(settings)
        self.consumer = clients.consumer(settings.kafka, f"{settings.kafka.group_prefix}-replay")
        self.producer = clients.producer(settings.kafka, **{"linger.ms": 50})

    def replay(self, ranges: list[PartitionRange], job: ReplayJob) -> dict[str, int]:
        """Every page of ``ranges`` into ``job.to_topic``; returns once Kafka confirmed them.

        All the ranges are read at once (one fetch start-up, one final flush), each partition paused
        as it reaches its end.
        """
        topic = self.settings.topics.pages_raw
        ends = {r.partition: r.end for r in ranges}
        nexts = {r.partition: r.start for r in ranges}
        counts = {"pages": 0, "records": 0, "failed": 0, "cpu_ms": 0}
        cpu_started_s = time.process_time()  # every thread of this process, librdkafka's included
        self.consumer.assign([TopicPartition(topic, r.partition, r.start) for r in ranges])
        try:
            reading, heard_at = set(ends), time.monotonic()
            while reading:
                # consume() waits for all it asks for: never ask for more than is left to read.
                left = sum(ends[p] - nexts[p] for p in reading)
                batch = self.consumer.consume(max(1, min(BATCH_MESSAGES, left)), 1.0)
                pages = [m for m in batch if _within(m, reading, ends)]
                for message in pages:
                    self._replay_page(message, job, counts)
                    nexts[message.partition() or 0] = (message.offset() or 0) + 1
                if pages:
                    heard_at = time.monotonic()
                    self.producer.poll(0)
                    self.progress(len(pages))
                    done = {p for p in reading if nexts[p] >= ends[p]}
                else:  # transaction markers or aborted messages may end a range: no message says so
                    positions = self.consumer.position([TopicPartition(topic, p) for p in reading])
                    done = {tp.partition for tp in positions if tp.offset >= ends[tp.partition]}
                    if not done and time.monotonic() - heard_at > STALL_S:
                        raise ReplayError(f"{topic} partitions {sorted(reading)} stopped answering")
                if done:
                    self.consumer.pause([TopicPartition(topic, p) for p in done])
                    reading -= done
        finally:
            self.consumer.unassign()
        if self.producer.flush(120) != 0:
            raise ReplayError(f"Kafka did not confirm every record written to {job.to_topic}")
        counts["cpu_ms"] = round((time.process_time() - cpu_started_s) * 1000)
        return counts

    def close(self) -> None:
        self.producer.flush(30)
        self.consumer.close()

    def _replay_page(self, message: Message, job: ReplayJob, counts: dict[str, int]) -> None:
        counts["pages"] += 1
        try:
            page = self._resolved(self.codec.decode(message.value() or b"").record, message)
            record = self.extract(page, schema_version=job.schema_version)
            value = self.codec.encode("page_record", record, job.schema_version, topic=job.to_topic)
        except ReplayError:
            raise
        except RegistryError as error:  # the registry's fault, not the page's: stop, say where to resume
            where = f"{message.partition()}:{message.offset()}"
            raise ReplayError(
                f"{error}; replay stopped at {message.topic()} partition:offset {where}: once the registry "
                f"answers, rerun from there (--from-offset {where})"
            ) from error
        except Exception:
            counts["failed"] += 1  # the live extractor dead-letters these; replay counts them
            return
        key = str(record["canonical_url"]).encode()
        while True:
            try:
                self.producer.produce(job.to_topic, value, key)
                break
            except BufferError:
                self.producer.poll(0.5)  # the local queue is full: let deliveries drain it
        counts["records"] += 1

    def _resolved(self, page: dict[str, Any], message: Message) -> Mapping[str, Any]:
        """``page`` with its body inline, retrying S3 a few times; :class:`ReplayError` when S3 is down."""
        from dualplane.connectors.storage.exceptions import ClaimCheckUnavailable  # noqa: PLC0415
        from dualplane.data_plane.extractor.body import resolve_body  # noqa: PLC0415

        for attempt in range(1, STORE_ATTEMPTS + 1):
            try:
                return resolve_body(page, self.bodies, max_bytes=self.settings.extract.max_html_bytes)
            except ClaimCheckUnavailable as error:
                if attempt == STORE_ATTEMPTS:
                    raise ReplayError(
                        f"{error}; replay stopped at {message.topic()}[{message.partition()}] offset "
                        f"{message.offset()}: run it again once S3 answers (pages replayed twice give "
                        "byte-identical records under the same keys, so downstream upserts absorb them)"
                    ) from error
                time.sleep(2.0 * attempt)
        raise AssertionError("unreachable")


_worker: ReplayWorker | None = None


def start_worker(settings: Settings, updates: Any) -> None:
    """Pool initializer: this process's consumer and producer, closed when it exits."""
    global _worker  # noqa: PLW0603 (one worker per process, shared by the tasks it runs)
    _worker = ReplayWorker(settings, updates.put)
    Finalize(_worker, _worker.close, exitpriority=10)


def replay_in_worker(ranges: list[PartitionRange], job: ReplayJob) -> dict[str, int]:
    assert _worker is not None, "start_worker runs first in every pool process"
    return _worker.replay(ranges, job)


def _within(message: Message, reading: set[int], ends: Mapping[int, int]) -> bool:
    """A page of a range still being read (not an error, not past the range's end)."""
    partition = message.partition() or 0
    return message.error() is None and partition in reading and (message.offset() or 0) < ends[partition]
