"""The S3 sink against the real Kafka and S3 endpoint: WARC and Avro files, exactly once, failures handled."""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from botocore.exceptions import ClientError

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.connectors.sink.exceptions import SinkMisconfigured, SinkUnavailable
from dualplane.connectors.sink.lag import sink_lag
from dualplane.connectors.sink.upload import ArchiveStore
from dualplane.connectors.storage import s3
from dualplane.connectors.storage.claim_check import KEY_PREFIX
from dualplane.core.settings import Settings
from tests.support.archive import all_avro_rows, all_warc_entries, avro_rows, get, list_keys, warc_entries
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.sink import (
    fill_raw_pages,
    page,
    produce_records,
    record,
    running_sink,
    wait_archived,
    with_sink,
)
from tests.support.tcp_relay import TcpRelay, free_port

pytestmark = pytest.mark.integration
MIB = 1024 * 1024
WARCIO = str(Path(sys.executable).parent / "warcio")

KEY = re.compile(
    r"^archive/topic=(?P<topic>[^/]+)/partition=(?P<p>\d+)/(?P=topic)\+(?P=p)\+(?P<offset>\d{10})\.(?P<ext>warc\.gz|avro)$"
)


@pytest.fixture
def sink_settings(control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory) -> Settings:
    settings = control_plane.settings()
    settings = settings.model_copy(update={"topics": settings.topics.model_copy(update={"partitions": 2})})
    return with_sink(settings, s3_buckets.create())


def _sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def test_raw_pages_become_warc_and_committed_records_become_avro_exactly_once(
    sink_settings: Settings, tmp_path: Path
) -> None:
    settings, bucket = sink_settings, sink_settings.sink_bucket
    big = b"<html><body>" + b"<p>claim-checked</p>" * 40_000 + b"</body></html>"  # 800 KB: goes to S3
    pages = [page(i) for i in range(22)] + [page(22, big)]
    fill_raw_pages(settings, pages)
    produce_records(settings, [record(i, 1) for i in range(12)])
    produce_records(settings, [record(100 + i, 1) for i in range(4)], commit=False)  # aborted: never archived
    produce_records(settings, [record(200 + i, 2) for i in range(9)])

    with running_sink(settings):
        wait_archived(settings)

    keys = list_keys(settings, bucket)
    assert keys and all(KEY.match(key) for key in keys), keys
    warc = [
        entry
        for key in keys
        if key.endswith(".warc.gz")
        for entry in warc_entries(get(settings, bucket, key), key)
    ]
    responses = {entry.uri: entry for entry in warc if entry.type == "response"}
    assert Counter(entry.type for entry in warc)["response"] == len(pages) == len(responses)
    assert Counter(entry.type for entry in warc)["request"] == len(pages)
    for raw in pages:
        entry = responses[raw["url"]]
        assert entry.payload == raw["body"]
        assert entry.headers["WARC-Payload-Digest"] == _sha1_b32(raw["body"])
        assert entry.date == raw["fetched_at"].strftime("%Y-%m-%dT%H:%M:%SZ")
        assert entry.http_status == "200"
        assert ("X-Archive-Orig-content-encoding", "gzip") in entry.http_headers  # the body is stored decoded
        assert ("Content-Length", str(len(raw["body"]))) in entry.http_headers
    for key in [key for key in keys if key.endswith(".warc.gz")][:2]:  # every digest checks out
        local = tmp_path / key.rsplit("/", 1)[1]
        local.write_bytes(get(settings, bucket, key))
        checked = subprocess.run(
            [WARCIO, "check", "-v", str(local)], capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0 and "digest pass" in checked.stdout, checked.stdout + checked.stderr
    avro_keys = [key for key in keys if key.endswith(".avro")]
    rows, versions = [], []
    for key in avro_keys:
        metadata, file_rows = avro_rows(get(settings, bucket, key))
        rows += file_rows
        versions.append({row["schema_version"] for row in file_rows})
        assert metadata["dualplane.kafka.topic"] == settings.topics.records
    committed = sorted(
        schemas.decode(m.value() or b"").record["url"]
        for m in read_to_end(settings.kafka, settings.topics.records)
    )
    assert sorted(row["url"] for row in rows) == committed and len(committed) == 21
    assert all(len(v) == 1 for v in versions), "schema versions never share a file"
    assert sink_lag(settings) == {settings.topics.pages_raw: 0, settings.topics.records: 0}
    status = run_cli("status", "--json", env=settings.to_env())
    assert status.exit_code == 0, status.stderr
    sink_rows = {row["topic"]: row["lag"] for row in status.json()["lag"] if row["consumer"] == "s3-sink"}
    assert sink_rows == {settings.topics.pages_raw: 0, settings.topics.records: 0}


def test_a_rerun_from_the_start_writes_the_same_objects_or_adopts_them(sink_settings: Settings) -> None:
    settings, bucket = sink_settings, sink_settings.sink_bucket
    fill_raw_pages(settings, [page(i) for i in range(13)])
    produce_records(settings, [record(i, 2) for i in range(11)])
    with running_sink(settings):
        wait_archived(settings)
    first = {key: get(settings, bucket, key) for key in list_keys(settings, bucket)}
    client = s3.client(settings.s3)
    # As if these were never uploaded, and the others uploaded but their offsets never committed:
    removed = sorted(first)[::2]
    for key in removed:
        client.delete_object(Bucket=bucket, Key=key)
    admin = clients.admin(settings.kafka)
    admin.delete_consumer_groups([settings.sink_group])[settings.sink_group].result(30)

    with running_sink(settings) as sink:
        wait_archived(settings)
        adopted = sink.stats["adopted"]

    second = {key: get(settings, bucket, key) for key in list_keys(settings, bucket)}
    assert second == first  # byte-identical: keys and rotation follow the records, never the clock
    assert adopted >= 1


def test_a_missing_bucket_is_one_clear_error_naming_the_setting(sink_settings: Settings) -> None:
    settings = with_sink(sink_settings, "no-such-archive-bucket")

    with pytest.raises(SinkMisconfigured) as raised, running_sink(settings):
        pass

    assert str(raised.value) == (
        "cannot check bucket 'no-such-archive-bucket': bucket 'no-such-archive-bucket' does not exist; "
        "create it or fix DUALPLANE_SINK_BUCKET"
    )


def test_an_s3_outage_commits_nothing_and_the_sink_resumes_where_it_stopped(sink_settings: Settings) -> None:
    target = urlsplit(sink_settings.s3.endpoint_url or "")
    relay = TcpRelay(free_port(), (target.hostname or "127.0.0.1", target.port or 80))
    relay.open()
    through = f"http://127.0.0.1:{relay.port}"
    settings = sink_settings.model_copy(
        update={"s3": sink_settings.s3.model_copy(update={"endpoint_url": through})}
    )
    pages = [page(i) for i in range(12)]
    fill_raw_pages(sink_settings, pages)
    produce_records(sink_settings, [record(i, 2) for i in range(8)])
    before = sink_lag(settings)  # records, plus the transaction markers that take offsets too
    try:
        with running_sink(settings) as sink:  # the bucket check passes, then S3 goes away
            relay.close()
            time.sleep(8)
            during = sink_lag(settings)
            relay.open()
            wait_archived(settings)
            stats = dict(sink.stats)
    finally:
        relay.close()

    assert during == before and before[settings.topics.pages_raw] == 12  # nothing committed
    entries = all_warc_entries(sink_settings, sink_settings.sink_bucket)
    assert Counter(e.uri for e in entries if e.type == "response") == Counter(p["url"] for p in pages)
    assert len(all_avro_rows(sink_settings, sink_settings.sink_bucket)) == 8 and stats["records"] == 20


def test_records_that_cannot_be_archived_become_dead_letters_and_the_sink_goes_on(
    sink_settings: Settings,
) -> None:
    settings = sink_settings
    dangling = {
        **page(5),
        "body": b"",
        "claim_check": f"s3://{settings.s3.bucket}/{KEY_PREFIX}{'0' * 64}",
        "body_sha256": "0" * 64,
        "body_bytes": 10,
    }
    # Not what the fetcher writes, but pages.raw is outside input: a URL that is no URI (it stopped the
    # sink at that page for ever, its request line not ASCII) and a job id with a blank line in it.
    iri = {**page(6), "url": "http://shop.example/straße", "final_url": "http://shop.example/straße"}
    fill_raw_pages(settings, [page(i) for i in range(4)] + [{**iri, "job_id": "odd\r\n\r\njob"}])
    producer = clients.producer(settings.kafka)
    producer.produce(
        settings.topics.pages_raw, schemas.encode("raw_page", dangling), b"dangling", partition=0
    )
    producer.produce(settings.topics.pages_raw, b"\x00not avro", b"garbage", partition=0)
    producer.produce(settings.topics.records, b"\xc3\x01cut", b"cut", partition=1)
    assert producer.flush(30) == 0
    produce_records(settings, [record(i, 1) for i in range(3)])

    with running_sink(settings) as sink:
        wait_archived(settings)
        dead_letters = sink.stats["dead_letters"]

    letters = {
        (letter := schemas.decode(m.value() or b"").record)["key"]: letter
        for m in read_to_end(settings.kafka, settings.topics.dead_letters)
    }
    assert dead_letters == 3 and set(letters) == {b"dangling", b"garbage", b"cut"}
    assert all(letter["stage"] == "sink" for letter in letters.values())
    assert "names no object" in letters[b"dangling"]["reason"]
    assert letters[b"garbage"]["reason"].startswith("undecodable raw page")
    assert letters[b"cut"]["reason"].startswith("undecodable record")
    responses = [e for e in all_warc_entries(settings, settings.sink_bucket) if e.type == "response"]
    assert len(responses) == 5 and len(all_avro_rows(settings, settings.sink_bucket)) == 3
    assert "http://shop.example/stra%C3%9Fe" in {entry.uri for entry in responses}


@pytest.mark.unit
@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "InvalidAccessKeyId",
            "(InvalidAccessKeyId); fix DUALPLANE_S3_ACCESS_KEY_ID / DUALPLANE_S3_SECRET_ACCESS_KEY",
        ),
        (
            "SignatureDoesNotMatch",
            "S3 refused the credentials (SignatureDoesNotMatch); fix DUALPLANE_S3_ACCESS_KEY_ID",
        ),
        ("AccessDenied", "access denied (AccessDenied); grant these credentials"),
        ("NoSuchBucket", "bucket 'archive' does not exist; create it or fix DUALPLANE_SINK_BUCKET"),
    ],
)
def test_permanent_s3_errors_stop_the_sink_with_the_setting_to_fix(code: str, expected: str) -> None:
    error = ClientError({"Error": {"Code": code, "Message": "no"}}, "PutObject")
    no_client: Any = None  # the mapping of errors needs no S3
    store = ArchiveStore(no_client, "archive", multipart_threshold_bytes=16 * MIB, part_bytes=8 * MIB)

    problem = store._error(error, "write s3://archive/k")

    assert isinstance(problem, SinkMisconfigured) and expected in str(problem)
    assert isinstance(
        store._error(ClientError({"Error": {"Code": "SlowDown"}}, "PutObject"), "write"), SinkUnavailable
    )


def test_run_s3_sink_with_a_missing_bucket_exits_1_with_one_line(sink_settings: Settings) -> None:
    env = {**sink_settings.to_env(), "DUALPLANE_SINK_BUCKET": "no-such-archive-bucket"}

    result = run_cli("run", "s3-sink", env=env, timeout_s=60)

    assert result.exit_code == 1
    assert "create it or fix DUALPLANE_SINK_BUCKET" in result.stderr and "Traceback" not in result.stderr
