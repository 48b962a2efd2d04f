"""The S3 sink as users run it: beside a real crawl of the sample site, killed with -9 mid-stream, and
archiving a 30 MB claim-checked page that only a raised limit extracts."""

from __future__ import annotations

import base64
import hashlib
import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane import schemas
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.kafka.lag import extractor_lag
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.connectors.sink.lag import sink_lag
from dualplane.connectors.storage import s3
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.extractor.replay import plan, replay
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.archive import avro_rows, get, list_keys, warc_entries
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline
from tests.support.sink import (
    fill_raw_pages,
    page,
    produce_records,
    record,
    running_sink,
    wait_archived,
    with_sink,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MIB = 1024 * 1024
KEY = re.compile(r"/partition=(\d+)/[^/]+\+(\d+)\+(\d{10})\.(warc\.gz|avro)$")


@pytest.fixture
def sink_settings(control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory) -> Settings:
    settings = control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=3, domain_delay_ms=10, fetch_concurrency=24),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )
    return with_sink(settings, s3_buckets.create(), flush_records=20)


@pytest.fixture
def pipeline(sink_settings: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    pipeline = Pipeline(sink_settings, tmp_path)
    yield pipeline
    pipeline.stop_all()


def _archive(settings: Settings) -> tuple[list[str], list, list[dict]]:
    """Keys, WARC entries and Avro rows of the whole archive; checks each file's offsets as it goes."""
    bucket = settings.sink_bucket
    keys = list_keys(settings, bucket, "archive/")
    client = s3.client(settings.s3)
    entries, rows, ranges = [], [], {}
    for key in keys:
        match = KEY.search(key)
        assert match, key
        metadata = client.head_object(Bucket=bucket, Key=key)["Metadata"]
        assert int(metadata["first-offset"]) == int(match.group(3))
        ranges.setdefault((key.split("/topic=")[1].split("/")[0], int(match.group(1))), []).append(
            (int(metadata["first-offset"]), int(metadata["last-offset"]))
        )
        data = get(settings, bucket, key)  # each object parses whole: no partial object under a final key
        if key.endswith(".warc.gz"):
            entries += warc_entries(data, key)
        else:
            rows += avro_rows(data)[1]
    for spans in ranges.values():  # files of a partition never overlap
        spans.sort()
        assert all(spans[i][1] < spans[i + 1][0] for i in range(len(spans) - 1)), spans
    return keys, entries, rows


def _committed_records(settings: Settings) -> Counter[str]:
    return Counter(
        schemas.decode(m.value() or b"").record["url"]
        for m in read_to_end(settings.kafka, settings.topics.records)
    )


def test_a_crawl_of_the_sample_site_is_archived_page_for_page(
    sink_settings: Settings, pipeline: Pipeline, tmp_path: Path
) -> None:
    settings = sink_settings
    with SampleSite(SiteSpec(seed=23, hosts=2, pages_per_host=15, latency_ms=5)) as site:
        for service in ("frontier", "fetcher", "extractor", "s3-sink"):
            pipeline.start(service)
        probe = JobProbe(settings)
        probe.submit(
            JobSpec(job_id="archived", allowed_domains=tuple(domain_of(s) for s in site.seeds)), site.seeds
        )
        probe.wait_finished("archived", timeout_s=240)
    deadline = time.monotonic() + 120
    while extractor_lag(settings) or any(sink_lag(settings).values()):
        assert time.monotonic() < deadline, pipeline.logs()
        time.sleep(1)

    _keys, entries, rows = _archive(settings)
    fetched = Counter(
        schemas.decode(m.value() or b"").record["final_url"]
        for m in read_to_end(settings.kafka, settings.topics.pages_raw)
    )
    responses = Counter(entry.uri for entry in entries if entry.type == "response")
    assert fetched and responses == fetched  # exactly one response record per fetched page
    assert Counter(row["url"] for row in rows) == _committed_records(settings)
    warc_key = next(key for key in _keys if key.endswith(".warc.gz"))
    local = tmp_path / "sample.warc.gz"
    local.write_bytes(get(settings, settings.sink_bucket, warc_key))
    index = subprocess.run([str(Path(sys.executable).parent / "warcio"), "index", str(local)],
                           capture_output=True, text=True, check=True)  # fmt: skip
    listed = [line for line in index.stdout.splitlines() if '"response"' in line]
    assert len(listed) == sum(1 for e in entries if e.key == warc_key and e.type == "response") > 0


def test_killed_with_minus_9_mid_stream_the_archive_has_every_record_once(
    sink_settings: Settings, pipeline: Pipeline
) -> None:
    settings = sink_settings
    pages = [
        page(
            i,
            b"<html><p>"
            + hashlib.sha256(str(i).encode()).hexdigest().encode() * (i % 50 + 1)
            + b"</p></html>",
        )
        for i in range(600)
    ]
    fill_raw_pages(settings, pages)
    for start in range(0, 600, 150):
        produce_records(settings, [record(start + i, 1 + (start // 150) % 2) for i in range(150)])
    total = sum(sink_lag(settings).values())

    process = pipeline.start("s3-sink")
    rng = random.Random(7)
    for _kill in range(3):
        lag = sum(sink_lag(settings).values())
        deadline = time.monotonic() + 60
        while sum(sink_lag(settings).values()) >= lag:  # files being written right now
            assert time.monotonic() < deadline, pipeline.logs()
            time.sleep(0.1)
        time.sleep(rng.uniform(0.0, 0.4))
        pipeline.kill(process)
        process = pipeline.start("s3-sink")
    wait_archived(settings, timeout_s=180)
    assert total >= 1200

    _keys, entries, rows = _archive(settings)
    responses = Counter(entry.uri for entry in entries if entry.type == "response")
    assert responses == Counter(p["url"] for p in pages)  # none missing, none twice
    assert Counter(row["url"] for row in rows) == _committed_records(settings)
    uploads = s3.client(settings.s3).list_multipart_uploads(Bucket=settings.sink_bucket).get("Uploads", [])
    print(f"\n{len(_keys)} objects; {len(uploads)} incomplete multipart uploads left (invisible)")


def test_a_30_mb_page_is_claim_checked_extracted_on_a_raised_limit_replayed_and_archived_intact(
    sink_settings: Settings,
) -> None:
    settings = with_sink(sink_settings, sink_settings.sink_bucket, multipart_threshold_bytes=5 * MIB)
    noise = hashlib.sha256(b"seed").digest()
    blocks = [hashlib.sha256(noise + i.to_bytes(4, "big")).hexdigest() for i in range(12 * MIB // 64)]
    incompressible = " ".join(blocks).encode()  # ~12 MB that gzips to ~7 MB: a multipart upload
    words = b"<p>thirty megabytes of words</p>" * (22 * MIB // 32)
    body = (
        b"<html><head><title>Huge</title></head><body><p>"
        + incompressible
        + b"</p>"
        + words
        + b"</body></html>"
    )
    assert len(body) > 30 * 1000 * 1000
    huge = page(0, body)
    fill_raw_pages(settings, [huge])  # the fetcher's hand-off: S3 first (claim check), then Kafka
    [raw] = [
        schemas.decode(m.value() or b"").record
        for m in read_to_end(settings.kafka, settings.topics.pages_raw)
    ]
    assert raw["claim_check"] and not raw["body"] and raw["body_sha256"] == hashlib.sha256(body).hexdigest()
    raised = settings.model_copy(
        update={"extract": settings.extract.model_copy(update={"max_html_bytes": 40 * MIB})}
    )

    result = replay(raised, plan(raised), schema_version=2, to_topic=settings.topics.records, processes=1)
    with running_sink(settings):
        wait_archived(settings, timeout_s=180)

    assert (result.records, result.failed) == (1, 0)
    keys, entries, rows = _archive(settings)
    [warc_key] = [key for key in keys if key.endswith(".warc.gz")]
    head = s3.client(settings.s3).head_object(Bucket=settings.sink_bucket, Key=warc_key)
    assert head["ContentLength"] > 5 * MIB and "-" in head["ETag"]  # uploaded in parts
    [response] = [entry for entry in entries if entry.type == "response"]
    assert hashlib.sha256(response.payload).hexdigest() == raw["body_sha256"]  # intact, digest verified
    assert (
        response.headers["WARC-Payload-Digest"]
        == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    )
    assert [row["url"] for row in rows] == [huge["url"]] and rows[0]["title"] == "Huge"
