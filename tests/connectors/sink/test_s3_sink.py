"""The S3 sink against the real Kafka and S3 endpoint: WARC and Avro files, exactly once, failures handled."""

from __future__ import annotations

import base64
import hashlib
import re
from collections import Counter

import pytest

import schemas
from connectors.sink.exceptions import SinkMisconfigured
from connectors.sink.lag import sink_lag
from connectors.storage import s3
from data_plane.kafka import clients
from data_plane.kafka.reader import read_to_end
from dualplane.core.settings import Settings
from tests.support.archive import avro_rows, get, list_keys, warc_entries
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

pytestmark = pytest.mark.integration

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
    sink_settings: Settings,
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
