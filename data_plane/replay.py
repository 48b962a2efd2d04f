"""Replay: re-run extraction over a bounded range of ``pages.raw``, without fetching anything.

A range is fixed before any page is read: per partition, a start offset (from a time through
``offsets_for_times``, or given) and an end offset (from a time, given, or the end offsets at
the moment the replay starts), so a replay always terminates however busy the topic is.
Partitions are replayed in parallel by worker processes (extraction is CPU-bound); each produces
``page_record``s of the chosen schema version to the chosen topic with an idempotent producer.

Determinism: a record's ``extracted_at`` is its raw page's ``fetched_at``, and nothing else in a
record depends on the clock or the process, so the same range replayed twice yields
byte-identical record payloads (keys too, so downstream upserts are idempotent).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition

import schemas
from data_plane import kafka_clients
from dualplane.exceptions import DualplaneError
from dualplane.settings import Settings

ProgressCallback = Callable[[int], None]


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
class ReplayResult:
    pages: int
    records: int
    failed: int
    duration_s: float
    to_topic: str
    schema_version: int


def plan(
    settings: Settings,
    *,
    from_time_ms: int | None = None,
    to_time_ms: int | None = None,
    from_offsets: Mapping[int, int] | None = None,
    to_offsets: Mapping[int, int] | None = None,
) -> list[PartitionRange]:
    """Per-partition offset ranges of ``pages.raw`` for the given times or offsets."""
    topic = settings.topics.pages_raw
    consumer = kafka_clients.consumer(settings.kafka, f"{settings.kafka.group_prefix}-replay-plan")
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise ReplayError(
                f"topic {topic!r} does not exist: nothing to replay (check DUALPLANE_TOPIC_PAGES_RAW)"
            )
        partitions = sorted(metadata.partitions)
        watermarks = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in partitions
        }
        starts = {p: watermarks[p][0] for p in partitions}
        ends = {p: watermarks[p][1] for p in partitions}
        if from_time_ms is not None:
            starts = _offsets_at(consumer, topic, partitions, from_time_ms, ends)
        if to_time_ms is not None:
            ends = _offsets_at(consumer, topic, partitions, to_time_ms, ends)
        starts.update(from_offsets or {})
        ends.update({p: min(o, ends[p]) for p, o in (to_offsets or {}).items()})
    finally:
        consumer.close()
    ranges = [PartitionRange(p, max(starts[p], watermarks[p][0]), ends[p]) for p in partitions]
    return [r for r in ranges if r.size > 0]


def replay(
    settings: Settings,
    ranges: list[PartitionRange],
    *,
    schema_version: int,
    to_topic: str,
    processes: int = 2,
    on_progress: ProgressCallback | None = None,
) -> ReplayResult:
    """Extract every page in ``ranges`` into ``to_topic``; returns once Kafka confirmed every record."""
    if schema_version not in schemas.default_registry().versions("page_record"):
        known = ", ".join(map(str, schemas.default_registry().versions("page_record")))
        raise ReplayError(f"page_record has no version {schema_version}; known versions: {known}")
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")  # no inherited Kafka clients or threads
    updates = context.Manager().Queue()
    totals = {"pages": 0, "records": 0, "failed": 0}
    with ProcessPoolExecutor(max_workers=max(1, processes), mp_context=context) as pool:
        futures = [
            pool.submit(_replay_partition, settings.model_dump_json(), r, schema_version, to_topic, updates)
            for r in ranges
        ]
        while not all(future.done() for future in futures):
            _drain(updates, on_progress)
            time.sleep(0.2)
        _drain(updates, on_progress)
        for future in futures:
            for key, value in future.result().items():  # re-raises a worker's failure
                totals[key] += value
    return ReplayResult(
        pages=totals["pages"],
        records=totals["records"],
        failed=totals["failed"],
        duration_s=round(time.monotonic() - started, 2),
        to_topic=to_topic,
        schema_version=schema_version,
    )


def _drain(updates: Any, on_progress: ProgressCallback | None) -> None:
    while not updates.empty():
        count = updates.get_nowait()
        if on_progress is not None:
            on_progress(count)


def _offsets_at(
    consumer: Any, topic: str, partitions: list[int], time_ms: int, ends: Mapping[int, int]
) -> dict[int, int]:
    """The first offset at or after ``time_ms`` per partition (the end offset when there is none)."""
    found = consumer.offsets_for_times([TopicPartition(topic, p, time_ms) for p in partitions], timeout=10)
    return {tp.partition: (tp.offset if tp.offset >= 0 else ends[tp.partition]) for tp in found}


def _replay_partition(
    settings_json: str, partition_range: PartitionRange, schema_version: int, to_topic: str, updates: Any
) -> dict[str, int]:
    """One worker process: read one partition's range, extract, produce; return the counts."""
    from data_plane.extract.record import extract_record  # noqa: PLC0415 (loaded in the worker)

    settings = Settings.model_validate_json(settings_json)
    topic = settings.topics.pages_raw
    consumer = kafka_clients.consumer(settings.kafka, f"{settings.kafka.group_prefix}-replay")
    producer = kafka_clients.producer(settings.kafka, **{"linger.ms": 50})
    counts = {"pages": 0, "records": 0, "failed": 0}
    try:
        consumer.assign([TopicPartition(topic, partition_range.partition, partition_range.start)])
        offset = partition_range.start
        while offset < partition_range.end:
            message = consumer.poll(10)
            if message is None:
                raise ReplayError(
                    f"{topic}[{partition_range.partition}] stopped answering at offset {offset}"
                )
            if message.error() is not None:
                continue
            offset = (message.offset() or 0) + 1
            counts["pages"] += 1
            try:
                page = schemas.decode(message.value() or b"").record
                record = extract_record(page, schema_version=schema_version)
                value = schemas.encode("page_record", record, schema_version)
            except Exception:
                counts["failed"] += 1  # the live extractor dead-letters these; replay counts them
            else:
                producer.produce(to_topic, value, str(record["canonical_url"]).encode())
                counts["records"] += 1
            producer.poll(0)
            if counts["pages"] % 50 == 0:
                updates.put(50)
        updates.put(counts["pages"] % 50)
        if producer.flush(120) != 0:
            raise ReplayError(f"Kafka did not confirm every record written to {to_topic}")
    finally:
        consumer.close()
    return counts
