"""Replay: re-run extraction over a bounded range of ``pages.raw``, without fetching anything.

A range is fixed before any page is read: per partition, a start offset (from a time through
``offsets_for_times``, or given) and an end offset (from a time, given, or the end offsets at
the moment the replay starts), so a replay always terminates however busy the topic is. Each page
is extracted into a ``page_record`` of the chosen schema version, produced to the chosen topic with
an idempotent producer; a claim-checked body is read back from S3 first, and a body over
``DUALPLANE_EXTRACT_MAX_HTML_BYTES`` counts as failed (the live extractor dead-letters these).

Processes: with one, the replay runs in the calling process. With more, partitions are shared out
to worker processes forked from a fork server that has imported and warmed the extraction stack
once (``data_plane.extractor.preload``): extraction is CPU-bound, and a spawned worker would spend
seconds importing trafilatura, extruct and lxml before its first page. Each worker
(:mod:`.replay_worker`) keeps one Kafka consumer and one producer for all the partitions it is
given, reads in batches and flushes once per partition.

Determinism: a record's ``extracted_at`` is its raw page's ``fetched_at``, and nothing else in a
record depends on the clock or the process, so the same range replayed twice yields
byte-identical record payloads (keys too, so downstream upserts are idempotent).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import spawn
from typing import Any

from confluent_kafka import TopicPartition

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor import metrics
from dualplane.data_plane.extractor.replay_worker import (
    PartitionRange,
    ProgressCallback,
    ReplayError,
    ReplayJob,
    replay_here,
    replay_in_worker,
    start_worker,
)

__all__ = ["PartitionRange", "ReplayError", "ReplayResult", "plan", "replay"]

PRELOAD = ["dualplane.data_plane.extractor.preload"]
MAIN_PATH_ENV = "_DUALPLANE_FORKSERVER_MAIN_PATH"  # read by data_plane.extractor.preload


@dataclass(frozen=True)
class ReplayResult:
    pages: int
    records: int
    failed: int
    duration_s: float
    to_topic: str
    schema_version: int
    cpu_s: float = 0.0  # CPU time of the processes that read, extracted and produced (sizing a fleet)


def plan(
    settings: Settings,
    *,
    from_time_ms: int | None = None,
    to_time_ms: int | None = None,
    from_offsets: Mapping[int, int] | None = None,
    to_offsets: Mapping[int, int] | None = None,
) -> list[PartitionRange]:
    """Per-partition offset ranges of ``pages.raw`` for the given times or offsets.

    Offsets name partitions: given ``from_offsets`` or ``to_offsets``, only the partitions they
    name are replayed (``{3: 1200}``, ``{3: 1201}`` is the one page at offset 1200 of partition 3).
    """
    topic = settings.topics.pages_raw
    consumer = clients.consumer(settings.kafka, f"{settings.kafka.group_prefix}-replay-plan")
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise ReplayError(
                f"topic {topic!r} does not exist: nothing to replay (check DUALPLANE_TOPIC_PAGES_RAW)"
            )
        partitions = sorted(metadata.partitions)
        named = set(from_offsets or {}) | set(to_offsets or {})
        if unknown := sorted(named - set(partitions)):
            raise ReplayError(f"{topic} has no partition {unknown}; its partitions are {partitions}")
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
    partitions = [p for p in partitions if p in named] if named else partitions
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
    job = ReplayJob(schema_version, to_topic)
    workers = min(max(1, processes), len(ranges))
    on_progress = metrics.replay_progress(to_topic, sum(r.size for r in ranges), on_progress)
    if workers > 1:
        totals = _replay_forked(settings, ranges, job, workers, on_progress)
    else:
        totals = replay_here(settings, ranges, job, on_progress)
    return ReplayResult(
        pages=totals["pages"],
        records=totals["records"],
        failed=totals["failed"],
        duration_s=round(time.monotonic() - started, 2),
        to_topic=to_topic,
        schema_version=schema_version,
        cpu_s=round(totals["cpu_ms"] / 1000, 2),
    )


def _replay_forked(
    settings: Settings,
    ranges: list[PartitionRange],
    job: ReplayJob,
    workers: int,
    on_progress: ProgressCallback | None,
) -> dict[str, int]:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # ignored when this process's fork server already runs
    updates = context.SimpleQueue()
    pool = ProcessPoolExecutor(workers, context, initializer=start_worker, initargs=(settings, updates))
    with pool:
        with _main_path_for_preload():  # the fork server starts (if it must) with the first worker
            futures = [pool.submit(replay_in_worker, share, job) for share in _shares(ranges, workers)]
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
            _drain(updates, on_progress)
            failure = next((f.exception() for f in finished if f.exception() is not None), None)
            if failure is not None:
                pool.shutdown(cancel_futures=True)  # ranges not started yet are not started
                raise failure
        _drain(updates, on_progress)
        return _sum(future.result() for future in futures)


def _shares(ranges: list[PartitionRange], workers: int) -> list[list[PartitionRange]]:
    """``ranges`` dealt to ``workers`` by size, largest first to the least loaded (keys spread pages
    evenly over partitions, so sizes predict work well); a worker reads its share all at once."""
    shares: list[list[PartitionRange]] = [[] for _ in range(workers)]
    for partition_range in sorted(ranges, key=lambda r: r.size, reverse=True):
        min(shares, key=lambda share: sum(r.size for r in share)).append(partition_range)
    return [share for share in shares if share]


@contextmanager
def _main_path_for_preload() -> Iterator[None]:
    """Name this program's main script to ``data_plane.extractor.preload`` while workers start."""
    main_path = spawn.get_preparation_data("replay").get("init_main_from_path")
    if main_path is None or MAIN_PATH_ENV in os.environ:
        yield
        return
    os.environ[MAIN_PATH_ENV] = main_path
    try:
        yield
    finally:
        del os.environ[MAIN_PATH_ENV]


def _sum(counts: Any) -> dict[str, int]:
    totals = {"pages": 0, "records": 0, "failed": 0, "cpu_ms": 0}
    for part in counts:
        for key, value in part.items():
            totals[key] += value
    return totals


def _drain(updates: Any, on_progress: ProgressCallback | None) -> None:
    while not updates.empty():
        count = updates.get()
        if on_progress is not None:
            on_progress(count)


def _offsets_at(
    consumer: Any, topic: str, partitions: list[int], time_ms: int, ends: Mapping[int, int]
) -> dict[int, int]:
    """The first offset at or after ``time_ms`` per partition (the end offset when there is none)."""
    found = consumer.offsets_for_times([TopicPartition(topic, p, time_ms) for p in partitions], timeout=10)
    return {tp.partition: (tp.offset if tp.offset >= 0 else ends[tp.partition]) for tp in found}
