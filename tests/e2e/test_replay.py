"""Replay and downstream consumption: re-extract pages.raw without fetching, v1 to v2, deterministically."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import fastavro
import pytest

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.connectors.storage.claim_check import KEY_PREFIX
from dualplane.core.settings import ExtractSettings, Settings
from dualplane.core.web.urls import canonicalize
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extractor.records import iter_records
from dualplane.data_plane.extractor.replay import plan, replay
from dualplane.sample_site import SampleSite, SiteModel, SiteSpec, reachable_urls
from tests.support.cli import interruptible, run_cli
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.hand_off import hand_off
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SPEC = SiteSpec(seed=29, hosts=2, pages_per_host=20, latency_ms=0, base_port=28_100)
BASE_MS = 1_793_534_400_000  # 2026-11-01T12:00:00Z
LEGACY_TITLE = "Caf\u00e9 Z\u00fcrich \u2013 \u20ac12"  # cp1252 has all of these, at other bytes than UTF-8


def _raw_page(url: str, body: bytes, fetched_at: datetime, **fields: Any) -> dict[str, Any]:
    return raw_page(body, url, fetched_at=fetched_at, job_id="replay-job", **{"charset": "utf-8", **fields})


@pytest.fixture
def raw_pages(control_plane: ControlPlaneFactory) -> Iterator[tuple[Settings, int]]:
    """pages.raw filled straight from the sample site's renderer: nothing is fetched."""
    settings = control_plane.settings().model_copy(update={"extract": ExtractSettings(schema_version=1)})
    ensure_data_plane_topics(settings)
    model = SiteModel(SPEC)
    producer = clients.producer(settings.kafka)
    urls = sorted(reachable_urls(SPEC))
    for i, url in enumerate(urls):
        parts = urlsplit(url)
        host = SPEC.origins().index(f"{parts.scheme}://{parts.netloc}")
        body = model.resolve(host, parts.path, parts.query).body
        fetched_at = datetime.fromtimestamp((BASE_MS + i * 1000) / 1000, UTC)
        value = schemas.encode("raw_page", _raw_page(url, body, fetched_at))
        # Kafka timestamps one second apart, so time ranges select exact slices.
        producer.produce(
            settings.topics.pages_raw, value, canonicalize(url).encode(), timestamp=BASE_MS + i * 1000
        )
    assert producer.flush(30) == 0
    yield settings, len(urls)


def _payloads(settings: Settings, topic: str) -> list[bytes]:
    return sorted(message.value() or b"" for message in read_to_end(settings.kafka, topic))


def test_replay_into_v2_is_deterministic_and_never_fetches(raw_pages: tuple[Settings, int]) -> None:
    settings, count = raw_pages
    ranges = plan(settings)
    first, second = f"{settings.topics.records}.replay-a", f"{settings.topics.records}.replay-b"

    with SampleSite(SPEC) as site:  # the pages' own site, up and watching
        results = [
            replay(settings, ranges, schema_version=2, to_topic=t, processes=2) for t in (first, second)
        ]
        requests = site.stats().total_requests

    assert [r.records for r in results] == [count, count]
    assert _payloads(settings, first) == _payloads(settings, second)  # byte-identical
    assert requests == 0, "replay must never fetch"


def test_crawl_with_v1_replay_into_v3_and_consume_both(
    raw_pages: tuple[Settings, int], tmp_path: Path
) -> None:
    settings, count = raw_pages
    pipeline = Pipeline(settings, tmp_path)
    pipeline.start("extractor")  # the live extractor writes v1 records
    try:
        deadline = time.monotonic() + 90
        while sum(1 for _ in iter_records(settings, follow=False)) < count:
            assert time.monotonic() < deadline, pipeline.logs()
            time.sleep(2)
    finally:
        pipeline.stop_all()
    v3_topic = f"{settings.topics.records}.v3"

    replayed = run_cli(
        "replay", "--schema-version", "3", "--to-topic", v3_topic, "--json", env=settings.to_env()
    )

    assert replayed.exit_code == 0, replayed.stderr
    assert replayed.json()["result"]["records"] == count
    v1 = {r.canonical_url: r for r in iter_records(settings, follow=False)}
    v3_settings = settings.model_copy(
        update={"topics": settings.topics.model_copy(update={"records": v3_topic})}
    )
    v3 = {r.canonical_url: r for r in iter_records(v3_settings, follow=False)}
    assert set(v1) == set(v3) and len(v1) == count
    assert {r.schema_version for r in v1.values()} == {1} and {r.schema_version for r in v3.values()} == {3}
    assert all(r.word_count is None for r in v1.values())
    assert all(r.word_count for r in v3.values() if r.text)
    assert all(v1[url].title == v3[url].title for url in v1)
    assert {r.extractor_version.split("/")[0] for r in v3.values()} == {"dualplane"}
    priced = [r.product for r in v3.values() if r.product and r.product.price is not None]
    assert priced and all(product.price_source for product in priced)  # v3 names each field's source
    assert all(r.product.price_source is None for r in v1.values() if r.product)


def test_replay_by_time_reads_only_pages_fetched_in_the_range(raw_pages: tuple[Settings, int]) -> None:
    settings, count = raw_pages
    middle_ms = BASE_MS + (count // 2) * 1000

    later = plan(settings, from_time_ms=middle_ms)
    earlier = plan(settings, to_time_ms=middle_ms)
    window = plan(settings, from_time_ms=BASE_MS + 5_000, to_time_ms=BASE_MS + 15_000)

    assert sum(r.size for r in later) == count - count // 2
    assert sum(r.size for r in earlier) == count // 2
    assert sum(r.size for r in window) == 10
    assert sum(r.size for r in plan(settings, from_time_ms=BASE_MS + count * 1000)) == 0


def test_records_export_and_tail_for_downstream_consumers(
    raw_pages: tuple[Settings, int], tmp_path: Path
) -> None:
    settings, count = raw_pages
    replay(settings, plan(settings), schema_version=2, to_topic=settings.topics.records, processes=1)
    env = settings.to_env()
    avro_file = tmp_path / "records.avro"

    exported = run_cli("records", "export", "--format", "avro", "--output", str(avro_file), env=env)
    jsonl = run_cli("records", "export", "--job", "replay-job", env=env)
    other_job = run_cli("records", "export", "--job", "no-such-job", env=env)

    assert exported.exit_code == 0, exported.stderr
    with avro_file.open("rb") as file:
        rows = list(fastavro.reader(file))
    assert len(rows) == count and all(row["job_id"] == "replay-job" for row in rows)
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(lines) == count and {line["schema_version"] for line in lines} == {2}
    assert other_job.stdout == ""

    tail = subprocess.Popen(
        interruptible([sys.executable, "-m", "dualplane", "records", "tail", "--from-beginning"]),
        env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        first = json.loads(tail.stdout.readline() if tail.stdout else b"{}")
    finally:
        tail.send_signal(signal.SIGINT)
        tail.wait(60)
    assert first["job_id"] == "replay-job"


def test_undecodable_raw_pages_become_dead_letters_and_the_extractor_goes_on(
    raw_pages: tuple[Settings, int], tmp_path: Path
) -> None:
    settings, count = raw_pages
    producer = clients.producer(settings.kafka)
    producer.produce(settings.topics.pages_raw, b"\x00not avro at all", b"bad-key", partition=0)
    assert producer.flush(30) == 0
    pipeline = Pipeline(settings, tmp_path)
    pipeline.start("extractor")
    try:
        deadline = time.monotonic() + 90
        while sum(1 for _ in iter_records(settings, follow=False)) < count:
            assert time.monotonic() < deadline, pipeline.logs()
            time.sleep(2)
        letters = [
            schemas.decode(m.value() or b"").record
            for m in read_to_end(settings.kafka, settings.topics.dead_letters)
        ]
    finally:
        pipeline.stop_all()

    assert len(letters) == 1
    letter = letters[0]
    assert letter["source_topic"] == settings.topics.pages_raw and letter["source_partition"] == 0
    assert letter["key"] == b"bad-key" and letter["stage"] == "decode"
    assert "undecodable raw page" in letter["reason"]
    schema_topic = list(read_to_end(settings.kafka, settings.topics.schemas))
    assert len(schema_topic) >= len(schemas.all_schemas())  # published for non-Python consumers


MIB = 1024 * 1024
HUGE_URL, DANGLING_URL, CORRUPT_URL = (
    "http://odd.example/huge", "http://odd.example/dangling", "http://odd.example/corrupt"
)  # fmt: skip


@pytest.fixture
def odd_pages(
    raw_pages: tuple[Settings, int], s3_buckets: S3BucketFactory
) -> Iterator[tuple[Settings, int, set[str]]]:
    """pages.raw with odd pages after the ordinary ones, handed over as the fetcher hands them over:
    a PDF, a legacy encoding, a 4 MiB page and a 20 MiB page (both claim-checked into a private
    bucket), plus a corrupted message and a reference to a body that is not in S3."""
    settings, count = raw_pages
    settings = settings.model_copy(
        update={"s3": settings.s3.model_copy(update={"bucket": s3_buckets.create()})}
    )
    at = datetime.fromtimestamp(BASE_MS / 1000, UTC)
    legacy = f"<html><head><title>{LEGACY_TITLE}</title></head><body><p>Gr\u00fc\u00dfe</p></body></html>"
    large = b"<html><body>" + b"<p>word </p>" * 350_000 + b"</body></html>"  # 4.2 MB: under the limit
    huge = b"<html><body>" + b"<p>twenty mebibytes of words</p>" * (20 * MIB // 32) + b"</body></html>"
    pdf = b"%PDF-1.7\n\x00\x01binary"
    hand_off(
        settings,
        [
            _raw_page("http://odd.example/pdf", pdf, at, content_type="application/pdf", charset=None),
            _raw_page("http://odd.example/legacy", legacy.encode("cp1252"), at, charset="cp1252"),
            _raw_page("http://odd.example/large", large, at),
            _raw_page(HUGE_URL, huge, at),
        ],
    )
    dangling = {
        **_raw_page(DANGLING_URL, b"", at),
        "claim_check": f"s3://{settings.s3.bucket}/{KEY_PREFIX}{'0' * 64}",
        "body_sha256": "0" * 64,
        "body_bytes": 1_000_000,
    }
    corrupt = schemas.encode("raw_page", _raw_page(CORRUPT_URL, b"<html>cut short</html>", at))[:-9]
    producer = clients.producer(settings.kafka)
    producer.produce(settings.topics.pages_raw, schemas.encode("raw_page", dangling), DANGLING_URL.encode())
    producer.produce(settings.topics.pages_raw, corrupt, CORRUPT_URL.encode())
    assert producer.flush(30) == 0
    odd = {"http://odd.example/pdf", "http://odd.example/legacy", "http://odd.example/large", HUGE_URL}
    yield settings, count, odd | {DANGLING_URL, CORRUPT_URL}


def test_odd_pages_end_as_records_or_dead_letters_and_the_extractor_goes_on(
    odd_pages: tuple[Settings, int, set[str]], tmp_path: Path
) -> None:
    settings, count, odd = odd_pages
    pipeline = Pipeline(settings, tmp_path)
    extractor = pipeline.start("extractor")
    try:
        deadline = time.monotonic() + 300  # a 20 MiB page claim-checked at CI load takes minutes
        while True:
            records = {r.url: r for r in iter_records(settings, follow=False)}
            decoded = [
                schemas.decode(m.value() or b"").record
                for m in read_to_end(settings.kafka, settings.topics.dead_letters)
            ]
            letters = {letter["key"].decode(): letter for letter in decoded}
            if len(records) + len(letters) >= count + len(odd):
                break
            assert time.monotonic() < deadline, pipeline.logs()
            time.sleep(2)
        still_running = extractor.poll() is None
    finally:
        pipeline.stop_all()

    assert still_running, pipeline.logs()
    assert all(url in records or url in letters for url in odd)
    assert all(letter["reason"] for letter in letters.values())
    assert records["http://odd.example/legacy"].title == LEGACY_TITLE
    assert records["http://odd.example/large"].text  # read back from its claim check
    assert letters[HUGE_URL]["stage"] == "limit"
    assert letters[HUGE_URL]["reason"].startswith(f"oversize: 20.0 MiB body of {HUGE_URL} exceeds")
    assert "raise DUALPLANE_EXTRACT_MAX_HTML_BYTES to extract it" in letters[HUGE_URL]["reason"]
    assert letters[DANGLING_URL]["stage"] == "claim-check"
    assert "names no object" in letters[DANGLING_URL]["reason"]
    assert letters[CORRUPT_URL]["stage"] == "decode"
    assert len(records) >= count  # every ordinary page still made it


def test_replay_reads_claim_checks_and_a_raised_limit_extracts_the_20_mib_page(
    odd_pages: tuple[Settings, int, set[str]],
) -> None:
    settings, count, odd = odd_pages
    ranges = plan(settings)
    located = {
        (m.key() or b"").decode(): (m.partition() or 0, m.offset() or 0)
        for m in read_to_end(settings.kafka, settings.topics.pages_raw)
    }
    partition, offset = located[HUGE_URL]
    raised = settings.model_copy(
        update={"extract": settings.extract.model_copy(update={"max_html_bytes": 24 * MIB})}
    )

    everything = replay(settings, ranges, schema_version=2, to_topic=f"{settings.topics.records}.all")
    huge_only = replay(
        raised,
        plan(raised, from_offsets={partition: offset}, to_offsets={partition: offset + 1}),
        schema_version=2,
        to_topic=f"{settings.topics.records}.huge",
        processes=1,
    )

    # Oversize, dangling and corrupt pages fail; the 4 MiB claim-checked page is extracted.
    assert (everything.pages, everything.records, everything.failed) == (count + len(odd), count + 3, 3)
    assert (huge_only.pages, huge_only.records, huge_only.failed) == (1, 1, 0)
    [record] = [
        schemas.decode(m.value() or b"").record for m in read_to_end(settings.kafka, huge_only.to_topic)
    ]
    assert record["url"] == HUGE_URL and record["text"].startswith("twenty mebibytes of words")
