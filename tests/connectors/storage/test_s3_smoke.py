"""S3 smoke tests over HTTP with boto3: put, get, list with pagination, and a missing key."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from tests.support.factories import S3BucketFactory

pytestmark = pytest.mark.integration


def test_put_get_round_trip_keeps_bytes_and_metadata(s3_buckets: S3BucketFactory) -> None:
    bucket = s3_buckets.create()
    body = bytes(range(256)) * 64

    s3_buckets.client.put_object(Bucket=bucket, Key="raw/page.bin", Body=body, Metadata={"job": "j-1"})
    fetched = s3_buckets.client.get_object(Bucket=bucket, Key="raw/page.bin")

    assert fetched["Body"].read() == body
    assert fetched["Metadata"] == {"job": "j-1"}


def test_list_paginates_over_every_key_under_a_prefix(s3_buckets: S3BucketFactory) -> None:
    bucket = s3_buckets.create()
    keys = {f"records/part-{i:03d}.avro" for i in range(25)}
    for key in keys:
        s3_buckets.client.put_object(Bucket=bucket, Key=key, Body=b"x")
    s3_buckets.client.put_object(Bucket=bucket, Key="elsewhere/other", Body=b"y")

    pages = s3_buckets.client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix="records/", PaginationConfig={"PageSize": 10}
    )
    listed = [item["Key"] for page in pages for item in page.get("Contents", [])]

    assert sorted(listed) == sorted(keys)


def test_missing_key_is_a_404(s3_buckets: S3BucketFactory) -> None:
    bucket = s3_buckets.create()

    with pytest.raises(ClientError) as error:
        s3_buckets.client.get_object(Bucket=bucket, Key="nope")

    assert error.value.response["Error"]["Code"] == "NoSuchKey"
