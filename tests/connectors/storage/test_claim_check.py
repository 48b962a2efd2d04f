"""The claim-check store over HTTP against the real S3 endpoint, and the fetcher's hand-off through it.

A body over the inline limit must be in S3 before its raw page is on Kafka; when S3 is down the
hand-off fails (the task is requeued) and nothing is produced.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dualplane import schemas
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.connectors.storage.claim_check import KEY_PREFIX, ClaimCheckStore, lifecycle_rule
from dualplane.connectors.storage.exceptions import (
    ClaimCheckInvalid,
    ClaimCheckMissing,
    ClaimCheckTooLarge,
    ClaimCheckUnavailable,
)
from dualplane.control_plane.fetcher.runner import HandOffFailed
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.namespaces import drop_namespace, private_namespace
from tests.support.factories import S3BucketFactory, unique_name
from tests.support.hand_off import hand_off

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
CLOSED_ENDPOINT = "http://127.0.0.1:9"  # discard port: nothing listens there


def _store(settings: Settings, bucket: str) -> ClaimCheckStore:
    return ClaimCheckStore.from_settings(settings.s3.model_copy(update={"bucket": bucket}))


def test_a_body_round_trips_under_its_content_address(
    settings: Settings, s3_buckets: S3BucketFactory
) -> None:
    bucket = s3_buckets.create()
    store = _store(settings, bucket)
    body = b"<html>" + bytes(range(256)) * 4096 + b"</html>"
    digest = hashlib.sha256(body).hexdigest()

    check = store.put(body)
    again = store.put(body)  # a refetch of the same bytes

    assert check == again
    assert check.uri == f"s3://{bucket}/{KEY_PREFIX}{digest}"
    assert (check.sha256, check.size_bytes) == (digest, len(body))
    assert store.get(check.uri, sha256=digest, max_bytes=len(body)) == body
    listed = s3_buckets.client.list_objects_v2(Bucket=bucket)["Contents"]
    assert [item["Key"] for item in listed] == [f"{KEY_PREFIX}{digest}"]


def test_reading_a_bad_reference_says_what_is_wrong(settings: Settings, s3_buckets: S3BucketFactory) -> None:
    bucket = s3_buckets.create()
    store = _store(settings, bucket)
    check = store.put(b"x" * 4096)

    with pytest.raises(ClaimCheckMissing, match="names no object"):
        store.get(f"s3://{bucket}/{KEY_PREFIX}{'0' * 64}")
    with pytest.raises(ClaimCheckMissing, match="names no object"):
        store.get(f"s3://{unique_name('gone')}/{KEY_PREFIX}{'0' * 64}")
    with pytest.raises(ClaimCheckInvalid, match="not an s3://bucket/key reference"):
        store.get("https://elsewhere.example/body")
    with pytest.raises(ClaimCheckInvalid, match="not a valid S3 location"):
        store.get("s3://No_Such:Bucket/key")
    with pytest.raises(ClaimCheckInvalid, match="not the 0000"):
        store.get(check.uri, sha256="0" * 64)
    with pytest.raises(ClaimCheckTooLarge) as too_large:
        store.get(check.uri, max_bytes=1024)
    assert too_large.value.size_bytes == 4096


def test_a_missing_bucket_is_created_on_first_store(settings: Settings, s3_buckets: S3BucketFactory) -> None:
    bucket = unique_name("bucket")
    s3_buckets.created.append(bucket)  # emptied and deleted afterwards

    check = _store(settings, bucket).put(b"first body" * 1000)

    assert (
        s3_buckets.client.head_object(Bucket=bucket, Key=check.uri.split("/", 3)[3])["ContentLength"]
        == 10_000
    )


def test_an_unreachable_store_is_unavailable_not_missing(settings: Settings) -> None:
    down = ClaimCheckStore.from_settings(settings.s3.model_copy(update={"endpoint_url": CLOSED_ENDPOINT}))

    with pytest.raises(ClaimCheckUnavailable, match="could not store"):
        down.put(b"body" * 1000)
    with pytest.raises(ClaimCheckUnavailable, match="could not read"):
        down.get(f"s3://bucket/{KEY_PREFIX}{'0' * 64}")


def _page(url: str, body: bytes) -> dict[str, Any]:
    return raw_page(body, url, fetched_at=datetime(2026, 11, 1, 12, tzinfo=UTC), job_id="cc-job")


@pytest.fixture
def private(settings: Settings, s3_buckets: S3BucketFactory, tmp_path: Path) -> Iterator[Settings]:
    """Settings with private topics and a private bucket."""
    made = private_namespace(settings, unique_name("cc"), tmp_path)
    made = made.model_copy(update={"s3": made.s3.model_copy(update={"bucket": s3_buckets.create()})})
    ensure_data_plane_topics(made)
    yield made
    drop_namespace(made)


def test_the_fetcher_hands_a_20_mib_body_over_as_a_claim_check(
    private: Settings, s3_buckets: S3BucketFactory
) -> None:
    big = b"<html><body>" + b"<p>twenty mebibytes of words</p>" * (20 * MIB // 32) + b"</body></html>"
    small = b"<html><body><p>small</p></body></html>"

    hand_off(private, [_page("https://big.example/huge", big), _page("https://big.example/small", small)])

    pages = {
        page["url"]: page
        for page in (
            schemas.decode(m.value() or b"").record
            for m in read_to_end(private.kafka, private.topics.pages_raw)
        )
    }
    huge, inline = pages["https://big.example/huge"], pages["https://big.example/small"]
    digest = hashlib.sha256(big).hexdigest()
    assert huge["body"] == b"" and huge["claim_check"] == f"s3://{private.s3.bucket}/{KEY_PREFIX}{digest}"
    assert (huge["body_sha256"], huge["body_bytes"]) == (digest, len(big))
    stored = s3_buckets.client.get_object(Bucket=private.s3.bucket, Key=f"{KEY_PREFIX}{digest}")
    assert stored["Body"].read() == big
    assert inline["body"] == small and inline["claim_check"] is None
    assert (inline["body_sha256"], inline["body_bytes"]) == (hashlib.sha256(small).hexdigest(), len(small))


def test_when_s3_is_down_the_hand_off_fails_and_nothing_reaches_kafka(private: Settings) -> None:
    down = private.model_copy(update={"s3": private.s3.model_copy(update={"endpoint_url": CLOSED_ENDPOINT})})
    big = b"<html>" + b"x" * (2 * MIB) + b"</html>"

    with pytest.raises(HandOffFailed, match=r"could not claim-check the body of https://big\.example/down"):
        hand_off(down, [_page("https://big.example/down", big)])

    assert list(read_to_end(private.kafka, private.topics.pages_raw)) == []
    assert list(read_to_end(private.kafka, private.topics.fetch_events)) == []


def test_a_new_reference_to_an_old_body_resets_its_age(
    settings: Settings, s3_buckets: S3BucketFactory
) -> None:
    bucket = s3_buckets.create()
    refreshing = ClaimCheckStore.from_settings(
        settings.s3.model_copy(update={"bucket": bucket, "claim_check_refresh_s": 0.0})
    )
    lazy = ClaimCheckStore.from_settings(settings.s3.model_copy(update={"bucket": bucket}))  # a day
    body = b"shared body " * 100_000
    check = refreshing.put(body)
    key = check.uri.split(f"s3://{bucket}/", 1)[1]

    def last_modified() -> datetime:
        return refreshing.client.head_object(Bucket=bucket, Key=key)["LastModified"]

    first = last_modified()
    time.sleep(1.1)  # S3 keeps whole seconds
    lazy.put(body)  # stored under a day ago: nothing to do
    untouched = last_modified()
    refreshing.put(body)  # older than the interval: copied onto itself
    refreshed = last_modified()

    assert untouched == first < refreshed
    assert refreshing.get(check.uri, sha256=check.sha256) == body


def test_the_lifecycle_rule_outlives_every_reference_and_s3_accepts_it(
    settings: Settings, s3_buckets: S3BucketFactory
) -> None:
    day_ms = 86_400_000
    rule = lifecycle_rule(pages_raw_retention_ms=30 * day_ms, refresh_after_s=86_400)
    assert (
        rule is not None and rule["Expiration"] == {"Days": 32} and rule["Filter"] == {"Prefix": KEY_PREFIX}
    )
    assert lifecycle_rule(pages_raw_retention_ms=90 * day_ms, refresh_after_s=3600)["Expiration"] == {
        "Days": 92
    }  # type: ignore[index]
    assert (
        lifecycle_rule(pages_raw_retention_ms=-1, refresh_after_s=86_400) is None
    )  # kept forever: never expire
    bucket = s3_buckets.create()
    client = ClaimCheckStore.from_settings(settings.s3).client
    client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [rule]})  # type: ignore[list-item]
    assert client.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][0]["Expiration"] == {"Days": 32}
