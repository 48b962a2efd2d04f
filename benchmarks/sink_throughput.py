"""S3 sink throughput (MB/s of Kafka values archived) against a plain consume of the same range.

1. Fills a private ``pages.raw`` with the sample site's pages (rendered in-process, repeated to
   ``--pages``) and a private ``records`` topic with as many records (extracted from those pages).
2. Per round, back to back on the same topics: a plain consume (a new consumer group, subscribe,
   read every value to the end, nothing else), then the S3 sink (a new group and key prefix, files
   of ``--flush-records`` records, idle flush after 0.5 s so the last file of each partition does
   not wait 30 s, otherwise the defaults: gzip level 6 per WARC record, deflate Avro blocks) from
   its start until its lag is zero, i.e. every file complete in S3 and committed.
3. Prints MB/s of each and the ratio sink / plain consume, per stream (warc, avro), medians over
   ``--rounds``. Both runs include joining a consumer group. Needs the stack up (its S3 endpoint is
   moto's in-memory server, so S3 here costs CPU on the same two cores).

    .venv/bin/python benchmarks/sink_throughput.py --pages 6000 --rounds 3 [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import schemas
from connectors.sink import S3Sink
from connectors.sink.lag import sink_lag
from connectors.storage import s3
from data_plane.extract.offline import raw_page
from data_plane.extract.record import extract_record
from data_plane.kafka import clients
from data_plane.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.namespaces import drop_namespace, private_namespace
from dualplane.sample_site import SiteModel, SiteSpec, reachable_urls

MB = 1_000_000


def sample_bodies() -> list[tuple[str, bytes]]:
    spec = SiteSpec(seed=41, hosts=3, pages_per_host=60, latency_ms=0, base_port=28_500)
    model = SiteModel(spec)
    bodies = []
    for url in sorted(reachable_urls(spec)):
        parts = urlsplit(url)
        host = spec.origins().index(f"{parts.scheme}://{parts.netloc}")
        bodies.append((url, model.resolve(host, parts.path, parts.query).body))
    return bodies


def fill(settings: Settings, pages: int, page_kib: int) -> dict[str, int]:
    """``pages`` raw pages and as many records; the bytes of values per topic."""
    ensure_data_plane_topics(settings)
    producer = clients.producer(settings.kafka, **{"linger.ms": 50})
    bodies = [(url, _padded(body, page_kib)) for url, body in sample_bodies()[:40]]
    extracted = [
        extract_record(raw_page(body, url, fetched_at=datetime.now(UTC)), schema_version=2)
        for url, body in bodies
    ]
    sizes = {settings.topics.pages_raw: 0, settings.topics.records: 0}
    start = datetime(2026, 11, 24, tzinfo=UTC)
    for i in range(pages):
        url, body = bodies[i % len(bodies)]
        url = f"{url}?copy={i}"
        value = schemas.encode(
            "raw_page", raw_page(body, url, fetched_at=start + timedelta(seconds=i), job_id="bench")
        )
        record = {**extracted[i % len(bodies)], "url": url, "canonical_url": url}
        for topic, data in (
            (settings.topics.pages_raw, value),
            (settings.topics.records, schemas.encode("page_record", record, 2)),
        ):
            producer.produce(topic, data, url.encode())
            sizes[topic] += len(data)
        producer.poll(0)
    producer.flush(60)
    return sizes


def _padded(body: bytes, page_kib: int) -> bytes:
    """``body`` with its visible text repeated until it is about ``page_kib`` KiB (0: as rendered)."""
    if not page_kib or len(body) >= page_kib * 1024:
        return body
    head, _, tail = body.partition(b"</body>")
    repeats = page_kib * 1024 // max(len(head), 1) + 1
    return head + b"<div>" + head.split(b"<body", 1)[-1] * repeats + b"</div></body>" + tail


def plain_consume(settings: Settings, topic: str, expected: int) -> float:
    """Seconds for a new group to read every value of ``topic``: subscribe, consume, nothing else."""
    consumer = clients.consumer(settings.kafka, f"bench-plain-{uuid.uuid4().hex[:8]}")
    started = time.monotonic()
    consumer.subscribe([topic])
    seen = 0
    try:
        while seen < expected:
            for message in consumer.consume(500, 0.5):
                if message.error() is None:
                    seen += 1
    finally:
        consumer.close()
    return time.monotonic() - started


def sink_run(settings: Settings, stream: str, flush_records: int) -> float:
    """Seconds for the sink, one stream, from its start to zero lag (every file in S3 and committed)."""
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
    sink = S3Sink.from_settings(settings)
    started = time.monotonic()
    thread = threading.Thread(target=sink.run, daemon=True)
    thread.start()
    try:
        while any(sink_lag(settings).values()):
            time.sleep(0.2)
        return time.monotonic() - started
    finally:
        sink.stop()
        thread.join(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--page-kib", type=int, default=0, help="pad pages to about this size (0: as rendered, ~5 KiB)"
    )
    parser.add_argument("--flush-records", type=int, default=500, help="DUALPLANE_SINK_FLUSH_RECORDS")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = Settings.from_env()
    settings = private_namespace(base, f"bench-sink-{uuid.uuid4().hex[:6]}", base.stack.data_dir / "bench")
    s3.ensure_bucket(settings.s3)
    try:
        sizes = fill(settings, args.pages, args.page_kib)
        results: dict[str, dict[str, Any]] = {}
        for stream, topic in (("warc", settings.topics.pages_raw), ("avro", settings.topics.records)):
            plain, sink = [], []
            for _ in range(args.rounds):
                plain.append(sizes[topic] / MB / plain_consume(settings, topic, args.pages))
                sink.append(sizes[topic] / MB / sink_run(settings, stream, args.flush_records))
            ratios = [s / p for s, p in zip(sink, plain, strict=True)]
            results[stream] = {
                "topic_mb": round(sizes[topic] / MB, 1),
                "plain_mb_s": round(statistics.median(plain), 1),
                "sink_mb_s": round(statistics.median(sink), 1),
                "ratio": round(statistics.median(ratios), 2),
            }
    finally:
        drop_namespace(settings)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for stream, row in results.items():
        print(
            f"{stream:5} {row['topic_mb']:7.1f} MB   plain consume {row['plain_mb_s']:7.1f} MB/s   "
            f"sink {row['sink_mb_s']:6.1f} MB/s   ratio {row['ratio']:.2f} (goal >= 0.8)"
        )


if __name__ == "__main__":
    main()
