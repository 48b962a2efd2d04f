"""S3 sink: its CPU per MB against the format's mandatory work, its throughput, and its lag next to a crawl.

1. Fills a private ``pages.raw`` with ``--pages`` raw pages and a private ``records`` topic with as many
   records. ``--corpus real`` (the default): distinct pages of the real-site crawl benchmark, read from
   ``real_sites.py``'s cache (``~/.cache/dualplane/real-sites``: documentation, a catalogue and a news
   archive, the sites taken in turn; pages over 512 KiB, claim-checked in a crawl, left out), each with
   the headers the real-site server sends and the fetcher's ``body_sha256``; records extracted from the
   first 40, repeated. ``--corpus sample``: 40 sample-site pages padded to about ``--page-kib`` KiB by
   repeating their text (compresses far better and faster than real HTML), repeated; ``--corpus
   articles``: 40 real article pages from ``benchmarks/data/articles.jsonl.xz``, repeated.
2. Per round, per stream (warc, avro), back to back on the same topics and the same range (offset 0 to
   the end of every partition): a plain consume (a new consumer group with the sink's consumer
   settings: read_committed, manual commit, the sink's session timeout; subscribe, ``consume(500)``
   until every value is read, nothing else), then the S3 sink with each of ``--processes`` (forked
   processes in one new group and key prefix, each the service ``dualplane run s3-sink --processes N``
   runs, files of ``--flush-records`` records, idle flush after 0.5 s, otherwise the defaults: ISA-L
   gzip level 2 per WARC record, deflate Avro blocks) from its start until the group has committed the
   whole range, i.e. every file is complete in S3 (a watcher reads the committed offsets every 20 ms).
3. Prints seconds and MB/s of each and the ratio sink / plain consume (taken within a round), medians
   over ``--rounds``, the CPU each spent per MB (its own process or processes, all threads; the sink's
   also after its start-up, i.e. from its first batch; and during the same run the stack's S3 endpoint
   and Kafka broker, read from ``/proc``, when the embedded stack started them).
4. Then the CPU per MB of each step of the sink measured alone on one thread (``sink_costs.py``), and
   the sink's CPU per MB after its start-up (its processes and the S3 endpoint) as a multiple of the
   format's mandatory work (``MANDATORY``: WARC's SHA-256 check of the body and its two SHA-1 digests,
   gzip; Avro's proof that each datum is whole, deflate; the PUT, client and endpoint). Goal: <= 1.5x.
   Also the best ratio to the plain consume the steps allow on this machine's cores.
5. ``--lag``: instead, per rate of ``--lag-rates`` (pages a second, default 18: the real-site crawl's,
   and 180), a fresh namespace, one sink with the service's default settings (``--idle-flush-s`` to
   change that one), and a load of real pages and their records at that rate for ``--lag-duration-s``;
   prints how far the sink was behind the topics' end during the load (records not yet written into a
   file), what was not yet in S3 (not committed), and the seconds from the load's last confirmed
   message to lag 0 (every file in S3). The idle flush decides that: the last open files wait for it.

    .venv/bin/python benchmarks/sink_throughput.py --pages 2000 --rounds 3 --processes 1
    .venv/bin/python benchmarks/sink_throughput.py --corpus sample --pages 6000 --page-kib 64 --rounds 3
    .venv/bin/python benchmarks/sink_throughput.py --lag --rounds 3
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import lzma
import multiprocessing
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from confluent_kafka import KafkaException, TopicPartition
from real_sites import DEFAULT_CACHE_DIR, SITES
from sink_costs import PutMeter, avro_costs, warc_costs

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.connectors.sink import S3Sink
from dualplane.connectors.sink.prepare import Preparer
from dualplane.connectors.sink.service import SESSION_TIMEOUT_MS
from dualplane.connectors.sink.session import BATCH, POLL_S, Session
from dualplane.connectors.storage import s3
from dualplane.core.settings import Settings
from dualplane.data_plane.extract import extract_record
from dualplane.data_plane.extract.offline import raw_page
from dualplane.namespaces import drop_namespace, private_namespace
from dualplane.sample_site import SiteModel, SiteSpec, reachable_urls
from dualplane.stack.manager import LocalStack

MB = 1_000_000
DISTINCT = 200  # values per topic the per-step costs are measured on (sink_costs.py)
CORES = os.cpu_count() or 1
TICKS = os.sysconf("SC_CLK_TCK")
WATCH_S = 0.02
CORPORA = ("real", "sample", "articles")
LAG_EVERY_S = 0.25
LOAD_DISTINCT_PAGES = 400  # the load cycles through these (in memory: ~50 MB)
CATCH_UP_GIVE_UP_S = 120.0
INLINE_MAX_BYTES = 512 * 1024  # larger pages would be claim-checked, and exceed a producer's 1 MB messages


def sample_bodies() -> list[tuple[str, bytes]]:
    spec = SiteSpec(seed=41, hosts=3, pages_per_host=60, latency_ms=0, base_port=28_500)
    model = SiteModel(spec)
    bodies = []
    for url in sorted(reachable_urls(spec)):
        parts = urlsplit(url)
        host = spec.origins().index(f"{parts.scheme}://{parts.netloc}")
        bodies.append((url, model.resolve(host, parts.path, parts.query).body))
    return bodies


def article_bodies(count: int) -> list[tuple[str, bytes]]:
    """The first ``count`` real article pages of the committed data set under ``INLINE_MAX_BYTES``."""
    with lzma.open(Path(__file__).parent / "data" / "articles.jsonl.xz", "rt", encoding="utf-8") as lines:
        pages = ((page["url"], page["html"].encode()) for page in map(json.loads, lines))
        inline = (page for page in pages if len(page[1]) < INLINE_MAX_BYTES)
        return [page for page, _ in zip(inline, range(count), strict=False)]


def real_site_bodies(count: int, cache_dir: Path = DEFAULT_CACHE_DIR) -> list[tuple[str, bytes]]:
    """``count`` distinct pages of the real-site benchmark (``real_sites.py``'s cache), the sites taken in
    turn, each site's pages in path order; pages over ``INLINE_MAX_BYTES`` (claim-checked in a crawl: 103
    of kaitai's generated-code pages) are left out. Fewer when the cache holds fewer."""
    per_site = []
    for site in SITES:
        root = cache_dir / site.name
        if not (root / "_manifest.json").is_file():
            raise SystemExit(
                f"no real site {site.name} under {cache_dir}: build it with "
                "`.venv/bin/python benchmarks/real_sites.py --build-only` (or use --corpus sample)"
            )
        files = sorted(p for p in root.rglob("*.html") if p.stat().st_size < INLINE_MAX_BYTES)
        per_site.append([(f"http://{site.name}.bench/{p.relative_to(root)}", p) for p in files])
    chosen = [page for turn in itertools.zip_longest(*per_site) for page in turn if page][:count]
    return [(url, path.read_bytes()) for url, path in chosen]


def served_headers(body: bytes) -> dict[str, str]:
    """What the real-site server (aiohttp) answers with, lower-case as the fetcher stores headers."""
    return {
        "content-type": "text/html; charset=utf-8",
        "content-length": str(len(body)),
        "date": "Tue, 24 Nov 2026 12:00:00 GMT",
        "server": "Python/3.12 aiohttp/3.11.18",
    }


def raw_value(url: str, body: bytes, fetched_at: datetime) -> bytes:
    """A ``pages.raw`` value as the fetcher writes it: the page, its headers and ``body_sha256``."""
    page = raw_page(body, url, fetched_at=fetched_at, job_id="bench", headers=served_headers(body))
    page.update(body_sha256=hashlib.sha256(body).hexdigest(), body_bytes=len(body))
    return schemas.encode("raw_page", page)


def corpus_bodies(corpus: str, pages: int, page_kib: int) -> list[tuple[str, bytes]]:
    """The distinct pages the topics are filled with, in turn (``pages`` of them for ``real``, else 40)."""
    if corpus == "real":
        return real_site_bodies(pages)
    if corpus == "articles":
        return article_bodies(40)
    return [(url, _padded(body, page_kib)) for url, body in sample_bodies()[:40]]


def fill(
    settings: Settings, pages: int, page_kib: int, corpus: str, compression: str
) -> tuple[dict[str, int], dict[str, list[bytes]]]:
    """``pages`` raw pages and as many records: the bytes of values per topic, and the first
    ``DISTINCT`` values (40 for the repeated corpora).

    ``compression`` is the producer's ``compression.type``; the records topic is written the same way.
    Records are extracted from the first 40 pages only (extraction costs ~0.1 s a real page), repeated."""
    ensure_data_plane_topics(settings)
    producer = clients.producer(settings.kafka, **{"linger.ms": 50, "compression.type": compression})
    failed: list[str] = []
    bodies = corpus_bodies(corpus, pages, page_kib)
    extracted = [
        extract_record(raw_page(body, url, fetched_at=datetime.now(UTC)), schema_version=2)
        for url, body in bodies[:40]
    ]
    sizes = {settings.topics.pages_raw: 0, settings.topics.records: 0}
    distinct: dict[str, list[bytes]] = {topic: [] for topic in sizes}
    start = datetime(2026, 11, 24, tzinfo=UTC)
    for i in range(pages):
        url, body = bodies[i % len(bodies)]
        url = f"{url}?copy={i}" if i >= len(bodies) else url
        value = raw_value(url, body, start + timedelta(seconds=i))
        record = {**extracted[i % len(extracted)], "url": url, "canonical_url": url}
        for topic, data in (
            (settings.topics.pages_raw, value),
            (settings.topics.records, schemas.encode("page_record", record, 2)),
        ):
            producer.produce(
                topic, data, url.encode(), on_delivery=lambda e, _m: failed.append(str(e)) if e else None
            )
            sizes[topic] += len(data)
            if i < min(len(bodies), DISTINCT):
                distinct[topic].append(data)
        producer.poll(0)
    left = producer.flush(300)
    if left or failed:  # else the consumes below would wait for records that never came
        raise RuntimeError(f"fill: {left} records not confirmed, {len(failed)} failed: {failed[:1]}")
    return sizes, distinct


def _padded(body: bytes, page_kib: int) -> bytes:
    """``body`` with its visible text repeated until it is about ``page_kib`` KiB (0: as rendered)."""
    if not page_kib or len(body) >= page_kib * 1024:
        return body
    head, _, tail = body.partition(b"</body>")
    repeats = page_kib * 1024 // max(len(head), 1) + 1
    return head + b"<div>" + head.split(b"<body", 1)[-1] * repeats + b"</div></body>" + tail


@dataclass
class Run:
    """One timed read of the range: seconds to its end and to the first record, CPU seconds spent."""

    total_s: float
    first_record_s: float
    cpu_s: dict[str, float]  # "ours" (the reading process or processes), "s3", "kafka": the stack's

    def mb_s(self, size_bytes: int) -> float:
        return size_bytes / MB / self.total_s


class CpuMeter:
    """CPU seconds (user + system, all threads) of processes, from ``/proc/PID/stat``."""

    def __init__(self, settings: Settings) -> None:
        found = {status.name: status.pid for status in LocalStack(settings).status() if status.pid}
        self.stack = {name: pid for name, pid in found.items() if name in ("s3", "kafka")}

    def stack_s(self) -> dict[str, float]:
        return {name: cpu_s(pid) for name, pid in self.stack.items()}

    @staticmethod
    def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {name: after[name] - before[name] for name in after}


def cpu_s(pid: int, task: str = "") -> float:
    """CPU seconds of process ``pid``, or of its thread ``task`` (``task/TID``)."""
    try:
        fields = Path(f"/proc/{pid}/{task}stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rdkafka_cpu_s(pid: int) -> float:
    """CPU seconds of the living librdkafka threads (named ``rdk:...``) of process ``pid``."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            named = (task / "comm").read_text().startswith("rdk:")
        except OSError:
            continue
        total += cpu_s(pid, f"task/{task.name}/") if named else 0.0
    return total


def plain_consume(settings: Settings, topic: str, expected: int, meter: CpuMeter) -> Run:
    """A new group reads every value of ``topic``: subscribe, consume, nothing else."""
    consumer = clients.consumer(
        settings.kafka, f"bench-plain-{uuid.uuid4().hex[:8]}", **{"session.timeout.ms": SESSION_TIMEOUT_MS}
    )
    stack_before, ours_before, rdkafka_before = (
        meter.stack_s(),
        cpu_s(os.getpid()),
        rdkafka_cpu_s(os.getpid()),
    )
    started = time.monotonic()
    first = None
    consumer.subscribe([topic])
    seen = 0
    try:
        while seen < expected:
            for message in consumer.consume(BATCH, POLL_S):
                if message.error() is None:
                    seen += 1
                    first = first or time.monotonic()
        ended = time.monotonic()
        spent = {
            "ours": cpu_s(os.getpid()) - ours_before,
            "of which librdkafka": rdkafka_cpu_s(os.getpid()) - rdkafka_before,
            **meter.spent(stack_before, meter.stack_s()),
        }
    finally:
        consumer.close()
    return Run(ended - started, (first or ended) - started, spent)


def sink_run(
    settings: Settings, stream: str, topic: str, *, flush_records: int, processes: int, meter: CpuMeter
) -> Run:
    """The sink in ``processes`` forked processes of one group, from their start to the range committed."""
    run = f"r{uuid.uuid4().hex[:8]}"
    settings = settings.model_copy(
        update={
            "kafka": settings.kafka.model_copy(
                update={"group_prefix": f"{settings.kafka.group_prefix}-{run}"}
            ),
            "sink": settings.sink.model_copy(
                update={
                    "streams": stream,
                    "prefix": f"bench/{run}",
                    "flush_records": flush_records,
                    "idle_flush_s": 0.5,
                }
            ),
        }
    )
    context = multiprocessing.get_context("fork")  # the children start warm: everything is imported
    stop, first = context.Event(), context.Value("d", 0.0)
    start_up_cpu = [context.Value("d", 0.0) for _ in range(processes)]
    stack_before = meter.stack_s()
    started = time.monotonic()
    children = [
        context.Process(target=_sink_process, args=(settings, stop, first, cpu)) for cpu in start_up_cpu
    ]
    for child in children:
        child.start()
    try:
        _wait_committed(settings, topic, children)
        ended = time.monotonic()
        ours = sum(cpu_s(child.pid or 0) for child in children)  # forked: all of it spent in this run
        rdkafka = sum(rdkafka_cpu_s(child.pid or 0) for child in children)
        spent = {
            "ours": ours,
            "of which librdkafka": rdkafka,
            "ours after start-up": ours - sum(cpu.value for cpu in start_up_cpu),
            **meter.spent(stack_before, meter.stack_s()),
        }
    finally:
        stop.set()
        for child in children:
            child.join(60)
            if child.is_alive():
                child.kill()
    return Run(ended - started, (first.value or ended) - started, spent)


def _sink_process(settings: Settings, stop: Any, first: Any, start_up_cpu: Any, handled: Any = None) -> None:
    """One sink process: the service's own code, noting when its first batch arrived (the time, shared by
    all processes, and this process's CPU then: its start-up), and counting in ``handled`` the records it
    wrote into a file (or dead-lettered)."""
    prepared = Preparer.prepared
    if handled is not None:
        handle = Session.handle

        def counting(session: Session, message: Any, outcome: Any) -> None:
            handle(session, message, outcome)
            with handled.get_lock():
                handled.value += 1

        Session.handle = counting  # type: ignore[method-assign]

    def noting(preparer: Preparer, messages: list[Any]) -> Any:
        if messages:
            with first.get_lock():
                first.value = first.value or time.monotonic()  # CLOCK_MONOTONIC: one clock for all
            start_up_cpu.value = cpu_s(os.getpid())
            Preparer.prepared = prepared  # type: ignore[method-assign]
        return prepared(preparer, messages)

    Preparer.prepared = noting  # type: ignore[method-assign]
    sink = S3Sink.from_settings(settings)

    def stopper() -> None:
        stop.wait()
        sink.stop()

    threading.Thread(target=stopper, daemon=True).start()
    sink.run()


@dataclass
class Load:
    """A crawl's output at ``rate_pages_s``: a raw page and a record each tick, as the fetcher and the
    extractor produce them (zstd, ``linger.ms`` 20), for ``duration_s``; counts what Kafka confirmed."""

    settings: Settings
    bodies: list[tuple[str, bytes]]
    records: list[dict[str, Any]]
    rate_pages_s: float
    duration_s: float
    delivered: int = 0
    delivered_bytes: int = 0
    ended_s: float = 0.0  # monotonic: when the last message was confirmed

    def run(self) -> None:
        producer = clients.producer(self.settings.kafka, **{"linger.ms": 20, "compression.type": "zstd"})
        topics = self.settings.topics
        started = time.monotonic()
        total = int(self.rate_pages_s * self.duration_s)
        for i in range(total):
            time.sleep(max(0.0, started + i / self.rate_pages_s - time.monotonic()))
            url, body = self.bodies[i % len(self.bodies)]
            url = f"{url}?load={i}"
            value = raw_value(url, body, datetime.now(UTC))
            record = {**self.records[i % len(self.records)], "url": url, "canonical_url": url}
            producer.produce(topics.pages_raw, value, url.encode(), on_delivery=self._delivered)
            producer.produce(
                topics.records,
                schemas.encode("page_record", record, 2),
                url.encode(),
                on_delivery=self._delivered,
            )
            producer.poll(0)
        if producer.flush(60):
            raise RuntimeError("load: pages not confirmed by Kafka within 60 s")
        self.ended_s = time.monotonic()

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.delivered += 1
            self.delivered_bytes += len(message.value() or b"")


class CommittedLag:
    """Records of the sink's topics its group has not committed (not in S3 yet), read every call."""

    def __init__(self, settings: Settings) -> None:
        self.consumer = clients.consumer(settings.kafka, settings.sink_group)  # never subscribes
        topics = [settings.topics.pages_raw, settings.topics.records]
        self.partitions = [
            TopicPartition(topic, p)
            for topic in topics
            for p in self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ]

    def __call__(self) -> int:
        return _asked_again(self._lag)

    def written(self) -> int:
        """Records in the topics (their end offsets, from offset 0)."""
        return _asked_again(
            lambda: sum(self.consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in self.partitions)
        )

    def _lag(self) -> int:
        committed = {
            (tp.topic, tp.partition): tp.offset for tp in self.consumer.committed(self.partitions, timeout=10)
        }
        lag = 0
        for tp in self.partitions:
            low, high = self.consumer.get_watermark_offsets(tp, timeout=10)
            done = committed[(tp.topic, tp.partition)]
            lag += max(0, high - (done if done >= 0 else low))
        return lag

    def close(self) -> None:
        self.consumer.close()


def _asked_again(ask: Callable[[], int]) -> int:
    """``ask()``, again while the broker answers "not leader" for a moment (after a leader election)."""
    for _ in range(50):
        try:
            return ask()
        except KafkaException:
            time.sleep(0.1)
    return ask()


def lag_run(
    base: Settings, *, rate_pages_s: float, duration_s: float, idle_flush_s: float | None
) -> dict[str, Any]:
    """One sink (the service, default settings but ``idle_flush_s``) next to a load of real pages and
    their records at ``rate_pages_s``: its lag during the load, and how soon after it it is 0."""
    # topics, groups and queues of its own: a new group reads a topic from its start, and the load must
    # never reach the default topics other work on the stack uses
    settings = private_namespace(base, f"bench-sinklag-{uuid.uuid4().hex[:6]}", base.stack.data_dir / "bench")
    if idle_flush_s is not None:
        settings = settings.model_copy(
            update={"sink": settings.sink.model_copy(update={"idle_flush_s": idle_flush_s})}
        )
    assert settings.topics.pages_raw != base.topics.pages_raw, "the load must not write the default topics"
    ensure_data_plane_topics(settings)
    s3.ensure_bucket(settings.s3)
    try:
        return _lag_run(settings, rate_pages_s=rate_pages_s, duration_s=duration_s)
    finally:
        drop_namespace(settings)


def _lag_run(settings: Settings, *, rate_pages_s: float, duration_s: float) -> dict[str, Any]:
    bodies = real_site_bodies(LOAD_DISTINCT_PAGES)
    records = [
        extract_record(raw_page(body, url, fetched_at=datetime.now(UTC)), schema_version=2)
        for url, body in bodies[:40]
    ]
    context = multiprocessing.get_context("fork")
    stop, first, cpu, handled = (context.Event(), context.Value("d", 0.0), context.Value("d", 0.0),
                                 context.Value("q", 0))  # fmt: skip
    child = context.Process(target=_sink_process, args=(settings, stop, first, cpu, handled))
    child.start()
    lag = CommittedLag(settings)
    try:
        warm = Load(settings, bodies, records, rate_pages_s=1, duration_s=1)  # the sink joins its group
        warm.run()
        while handled.value < warm.delivered:
            time.sleep(WATCH_S)
        cpu_before, s3_before = cpu_s(child.pid or 0), CpuMeter(settings).stack_s()
        load = Load(settings, bodies, records, rate_pages_s=rate_pages_s, duration_s=duration_s)
        producing = threading.Thread(target=load.run)
        producing.start()
        samples: list[tuple[float, int, int]] = []  # seconds since the load began, behind, not committed
        started = time.monotonic()
        while producing.is_alive() or lag() > 0:
            not_committed, written = lag(), lag.written()
            samples.append((time.monotonic() - started, written - handled.value, not_committed))
            if time.monotonic() - started > duration_s + CATCH_UP_GIVE_UP_S:
                break
            time.sleep(LAG_EVERY_S)
        caught_up, left = time.monotonic(), lag()
        spent_ms = 1000 * (cpu_s(child.pid or 0) - cpu_before)
        s3_ms = 1000 * CpuMeter.spent(s3_before, CpuMeter(settings).stack_s()).get("s3", 0.0)
    finally:
        stop.set()
        child.join(60)
        if child.is_alive():
            child.kill()
        lag.close()
    during = [sample for sample in samples if sample[0] <= load.ended_s - started]
    mb = load.delivered_bytes / MB
    return {
        "rate_pages_s": rate_pages_s,
        "idle_flush_s": settings.sink.idle_flush_s,
        "pages": load.delivered // 2,
        "mb_s": round(mb / max(load.ended_s - started, 1e-9), 1),
        "max_behind": max((s[1] for s in during), default=0),
        "median_behind": statistics.median([s[1] for s in during] or [0]),
        "max_not_committed": max((s[2] for s in samples), default=0),
        "caught_up_s": round(caught_up - load.ended_s, 1) if left == 0 else None,
        "sink_cpu_ms_per_mb": round((spent_ms + s3_ms) / mb, 2),
        "sink_core_share": round(spent_ms / 1000 / (caught_up - started), 3),
    }


def _wait_committed(settings: Settings, topic: str, children: list[Any]) -> None:
    """Until the sink's group has committed every partition of ``topic`` up to its end."""
    watcher = clients.consumer(settings.kafka, settings.sink_group)  # never subscribes: joins no group
    try:
        partitions = [
            TopicPartition(topic, p) for p in watcher.list_topics(topic, timeout=10).topics[topic].partitions
        ]
        ends = {tp.partition: watcher.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions}
        while True:
            try:
                committed = watcher.committed(partitions, timeout=10)
            except KafkaException:  # the coordinator moves or loads after a broker restart: ask again
                time.sleep(WATCH_S)
                continue
            if all(tp.offset >= ends[tp.partition] for tp in committed):
                return
            if not any(child.is_alive() for child in children):
                raise RuntimeError("every sink process ended before the range was committed")
            time.sleep(WATCH_S)
    finally:
        watcher.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--page-kib", type=int, default=64, help="pad pages to about this size (0: as rendered, ~5 KiB)"
    )
    parser.add_argument(
        "--corpus",
        default="real,sample",
        help="comma-separated, in order: real (real-site pages), sample (padded), articles",
    )
    parser.add_argument("--flush-records", type=int, default=500, help="DUALPLANE_SINK_FLUSH_RECORDS")
    parser.add_argument("--processes", default="1,2", help="sink processes to measure, comma-separated")
    parser.add_argument("--streams", default="warc,avro")
    parser.add_argument(
        "--compression",
        default="zstd",
        choices=("zstd", "lz4", "snappy", "gzip", "none"),
        help="the fill producer's compression.type (zstd: what dualplane's producers use)",
    )
    parser.add_argument(
        "--lag",
        action="store_true",
        help="instead: the sink's lag next to a crawl-speed load of real pages, and its catch-up after",
    )
    parser.add_argument("--lag-rates", default="18,180", help="--lag: pages (and records) a second")
    parser.add_argument("--lag-duration-s", type=float, default=30.0, help="--lag: how long the load runs")
    parser.add_argument(
        "--idle-flush-s",
        type=float,
        default=None,
        help="--lag: DUALPLANE_SINK_IDLE_FLUSH_S (default: its own)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    base = Settings.from_env()
    if args.lag:
        lag_main(base, args)
        return
    results = []
    for corpus in args.corpus.split(","):
        if corpus not in CORPORA:
            parser.error(f"--corpus {corpus}: choose from {', '.join(CORPORA)}")
        results += [{"corpus": corpus, **row} for row in corpus_rows(base, corpus, counts, args)]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for row in results:
        print(f"{row['corpus']}, {row['stream']}: {row['topic_mb']:.1f} MB of values, {args.pages} records")
        _line("plain consume", row["plain"])
        for n, sink in row["sink"].items():
            _line(f"sink, {n} process{'es' if int(n) > 1 else ''}", sink)
            print(f"{'':20}ratio to the plain consume {sink['ratio']:.2f}")
        _costs(row)
        _against_mandatory(row)


def corpus_rows(base: Settings, corpus: str, counts: list[int], args: Any) -> list[dict[str, Any]]:
    """One row per stream for ``corpus``, on topics of a namespace of its own."""
    settings = private_namespace(base, f"bench-sink-{uuid.uuid4().hex[:6]}", base.stack.data_dir / "bench")
    s3.ensure_bucket(settings.s3)
    meter = CpuMeter(settings)
    topics = {"warc": settings.topics.pages_raw, "avro": settings.topics.records}
    try:
        sizes, distinct = fill(settings, args.pages, args.page_kib, corpus, args.compression)
        results = [
            measure(
                settings, stream, topics[stream], sizes[topics[stream]], counts=counts, args=args, meter=meter
            )
            for stream in args.streams.split(",")
        ]
        put = PutMeter(settings, lambda: cpu_s(meter.stack.get("s3", 0)))
        for row in results:
            steps = warc_costs if row["stream"] == "warc" else avro_costs
            row["steps_ms_per_mb"] = steps(settings, distinct[topics[row["stream"]]], put)
            row["bound"] = {name: round(value, 2) for name, value in _bound(row).items()}
            row["mandatory"] = _mandatory(row)
    finally:
        drop_namespace(settings)
    return results


def lag_main(base: Settings, args: Any) -> None:
    """``--lag``: rounds of ``lag_run`` per rate, each on topics of a private namespace it drops after."""
    rows = []
    for rate in (float(r) for r in args.lag_rates.split(",")):
        runs = [
            lag_run(base, rate_pages_s=rate, duration_s=args.lag_duration_s, idle_flush_s=args.idle_flush_s)
            for _ in range(args.rounds)
        ]
        rows.append({key: _median_of(runs, key) for key in runs[0]} | {"rounds": runs})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print_lag(rows)


def print_lag(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        caught_up = "never" if row["caught_up_s"] is None else f"{row['caught_up_s']:.1f} s"
        print(
            f"load {row['rate_pages_s']:.0f} pages/s ({row['mb_s']:.1f} MB/s of raw pages and records,"
            f" {row['pages']} pages), idle flush {row['idle_flush_s']:g} s:"
            f" behind at most {row['max_behind']} records (median {row['median_behind']}),"
            f" not yet in S3 at most {row['max_not_committed']}; lag 0 {caught_up} after the load ended;"
            f" sink CPU {row['sink_cpu_ms_per_mb']:.2f} ms/MB, {100 * row['sink_core_share']:.1f}% of a core"
        )


def _median_of(runs: list[dict[str, Any]], key: str) -> Any:
    values = [run[key] for run in runs]
    if any(value is None for value in values):
        return None  # a round that never caught up: no median hides it
    return round(statistics.median(values), 2) if isinstance(values[0], int | float) else values[0]


def _bound(row: dict[str, Any]) -> dict[str, float]:
    """The least CPU per MB a sink spends (the steps alone), and the best ratio it allows on this machine."""
    steps, cpu = row["steps_ms_per_mb"], row["plain"]["cpu_ms_per_mb"]
    python = cpu["ours"] - cpu["of which librdkafka"]
    parts = {
        "consume": cpu["ours"],
        "broker": cpu.get("kafka", 0.0),
        "prepare": steps["prepare (all)"],
        "blocks": steps.get("blocks and deflate", 0.0),  # WARC's gzip is in its prepare
        "S3": steps["S3 PUT client"] + steps["S3 endpoint"],
    }
    least = sum(parts.values())
    # what one thread must do in turn: handing the messages over, and for Avro the check and the blocks
    serial = python + (parts["prepare"] + parts["blocks"] if row["stream"] == "avro" else 0.0)
    wall_ms = max(least / CORES, serial)
    # generous to the sink: it starts with the plain consume, then only does the steps, all cores its own
    # (no idle flush of the last files, no last upload); the plain consume's own start-up is most of its run
    best_s = row["plain"]["first_record_s"] + row["topic_mb"] * wall_ms / 1000
    plain_cpu = parts["consume"] + parts["broker"]
    return {
        **parts,
        "least": least,
        "wall": wall_ms,
        "best_s": best_s,
        "ratio": row["plain"]["s"] / best_s,
        "cpu_multiple": least / plain_cpu,
    }


MANDATORY = {
    # what the format itself asks for each MB, whatever the code around it: WARC's digests (the body
    # checked against the fetcher's body_sha256, then SHA-1 payload and block digests) and gzip; Avro's
    # proof that each datum is whole (else one bad record spoils its block) and deflate; then the PUT
    "warc": ("SHA-256 check", "SHA-1 payload", "SHA-1 block", "gzip", "S3 PUT client", "S3 endpoint"),
    "avro": ("cavro check", "blocks and deflate", "S3 PUT client", "S3 endpoint"),
}
GOAL_MULTIPLE = 1.5


def _mandatory(row: dict[str, Any]) -> dict[str, Any]:
    """The sink's CPU per MB after its start-up (its processes and the S3 endpoint) against the format's
    mandatory work per MB (the steps alone, ``MANDATORY``), for each process count."""
    steps = row["steps_ms_per_mb"]
    work = sum(steps[name] for name in MANDATORY[row["stream"]])
    consume = row["plain"]["cpu_ms_per_mb"]["ours"]  # reading the topic at all: librdkafka, messages
    multiples = {}
    for n, sink in row["sink"].items():
        cpu = sink["cpu_ms_per_mb"]
        spent = cpu["ours after start-up"] + cpu.get("s3", 0.0)
        multiples[n] = {
            "sink_ms_per_mb": round(spent, 2),
            "multiple": round(spent / work, 2),
            "multiple_with_consume": round(spent / (work + consume), 2),
        }
    return {"work_ms_per_mb": round(work, 2), "consume_ms_per_mb": consume, "sink": multiples}


def _against_mandatory(row: dict[str, Any]) -> None:
    steps = row["steps_ms_per_mb"]
    parts = " + ".join(f"{name} {steps[name]:.2f}" for name in MANDATORY[row["stream"]])
    mandatory = row["mandatory"]
    print(f"  the format's mandatory work: {parts} = {mandatory['work_ms_per_mb']:.2f} ms/MB")
    for n, sink in mandatory["sink"].items():
        print(
            f"    sink, {n} process{'es' if int(n) > 1 else ''}: {sink['sink_ms_per_mb']:.2f} ms/MB after"
            f" start-up (its processes and the S3 endpoint) = {sink['multiple']:.2f}x that work"
            f" (goal <= {GOAL_MULTIPLE}); {sink['multiple_with_consume']:.2f}x that work and the plain"
            f" consume's own CPU ({mandatory['consume_ms_per_mb']:.2f})"
        )


def _costs(row: dict[str, Any]) -> None:
    """The steps' CPU per MB, and the best ratio they allow on this machine's cores."""
    print("  CPU ms per MB of values, each step alone on one thread (sink_costs.py):")
    print("    " + ", ".join(f"{name} {ms:.2f}" for name, ms in row["steps_ms_per_mb"].items()))
    bound = row["bound"]
    names = ("consume", "broker", "prepare", "blocks", "S3")
    parts = " + ".join(f"{name} {bound[name]:.2f}" for name in names)
    print(
        f"    the least a sink spends: {parts} = {bound['least']:.2f} ms/MB; on {CORES} free cores"
        f" >= {bound['wall']:.2f} ms/MB of wall time; started with the plain consume's first record,"
        f" >= {bound['best_s']:.2f} s against its {row['plain']['s']:.2f} s: ratio <= {bound['ratio']:.2f}"
    )
    print(
        f"    per MB that is {bound['cpu_multiple']:.1f}x the plain consume's CPU (its own and the broker's)"
    )


def _line(label: str, run: dict[str, Any]) -> None:
    cpu = ", ".join(f"{name} {ms:.1f}" for name, ms in run["cpu_ms_per_mb"].items())
    print(
        f"  {label:18}{run['s']:6.2f} s {run['mb_s']:7.1f} MB/s"
        f"   first record after {run['first_record_s']:.2f} s   CPU ms/MB: {cpu}"
    )


def measure(
    settings: Settings,
    stream: str,
    topic: str,
    size: int,
    *,
    counts: list[int],
    args: Any,
    meter: CpuMeter,
) -> dict[str, Any]:
    """Rounds of plain consume, then the sink with each process count; medians of MB/s and of ratios."""
    plain: list[Run] = []
    sinks: dict[int, list[Run]] = {n: [] for n in counts}
    for _ in range(args.rounds):
        plain.append(plain_consume(settings, topic, args.pages, meter))
        for n in counts:
            sinks[n].append(
                sink_run(settings, stream, topic, flush_records=args.flush_records, processes=n, meter=meter)
            )
    row: dict[str, Any] = {
        "stream": stream,
        "topic_mb": round(size / MB, 1),
        "plain": _summary(plain, size),
        "sink": {},
    }
    for n, runs in sinks.items():
        ratios = [s.mb_s(size) / p.mb_s(size) for s, p in zip(runs, plain, strict=True)]
        row["sink"][n] = {**_summary(runs, size), "ratio": _median(ratios, 2)}
    return row


def _summary(runs: list[Run], size: int) -> dict[str, Any]:
    return {
        "s": _median([r.total_s for r in runs], 2),
        "mb_s": _median([r.mb_s(size) for r in runs]),
        "first_record_s": _median([r.first_record_s for r in runs], 2),
        "cpu_ms_per_mb": {
            name: _median([1000 * r.cpu_s[name] / (size / MB) for r in runs], 2) for name in runs[0].cpu_s
        },
    }


def _median(values: list[float], digits: int = 1) -> float:
    return round(statistics.median(values), digits)


if __name__ == "__main__":
    main()
