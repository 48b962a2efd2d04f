"""Seed lists streamed from a local file or the S3 endpoint, gzip or not, with bad lines counted."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dualplane.connectors.seeds import SeedList, open_seed_list
from dualplane.connectors.seeds.exceptions import SeedListError
from dualplane.connectors.storage import s3
from dualplane.core.settings import SeedSettings, Settings
from tests.support.factories import S3BucketFactory

GOOD = ["https://shop.example/a", "http://news.example:8080/b?x=1", "https://shop.example/c"]
LIST = b"".join(
    [
        b"# a comment, then a blank line\n\n",
        f"{GOOD[0]}\n".encode(),
        b"not a url\n",
        f"  {GOOD[1]}  \r\n".encode(),
        b"ftp://files.example/x\n",
        b"\xff\xfe\n",
        GOOD[2].encode(),  # no final newline
    ]
)


def _check_counts(seeds: list[str], seed_list: SeedList) -> None:
    assert seeds == GOOD
    assert (seed_list.lines, seed_list.seeds, seed_list.bad) == (8, 3, 3)
    assert [(bad.number, bad.text) for bad in seed_list.bad_examples] == [
        (4, "not a url"),
        (6, "ftp://files.example/x"),
        (7, "\ufffd\ufffd"),
    ]
    assert seed_list.bad_examples[0].reason == "whitespace inside the URL"
    assert seed_list.bad_examples[2].reason == "not UTF-8"


@pytest.mark.unit
def test_a_local_list_yields_its_urls_and_counts_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_bytes(LIST)
    seed_list = open_seed_list(str(path), Settings())

    seeds = list(seed_list)

    _check_counts(seeds, seed_list)
    assert "ftp" in seed_list.bad_examples[1].reason
    assert seed_list.bytes_read == seed_list.total_bytes == len(LIST)


@pytest.mark.unit
def test_an_overlong_line_is_skipped_in_pieces_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt.gz"
    with gzip.open(path, "wb") as file:
        file.write(b"https://a.example/" + b"x" * 3_000_000 + b"\nhttps://b.example/\n")
    seed_list = open_seed_list(str(path), Settings().model_copy(update={"seeds": SeedSettings()}))

    assert list(seed_list) == ["https://b.example/"]
    assert seed_list.bad == 1 and seed_list.bad_examples[0].reason == "longer than 65536 bytes"
    assert seed_list.bad_examples[0].number == 1


@pytest.mark.integration
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_list_in_s3_streams_plain_or_gzip(
    settings: Settings, s3_buckets: S3BucketFactory, compressed: bool
) -> None:
    bucket = s3_buckets.create()
    body = gzip.compress(LIST) if compressed else LIST
    s3.client(settings.s3).put_object(Bucket=bucket, Key="lists/seeds", Body=body)
    seed_list = open_seed_list(f"s3://{bucket}/lists/seeds", settings)

    seeds = list(seed_list)

    _check_counts(seeds, seed_list)
    assert seed_list.bytes_read == seed_list.total_bytes == len(body)
    assert list(seed_list) == GOOD  # a second pass reads it again, with fresh counters
    assert seed_list.bad == 3


@pytest.mark.integration
def test_a_missing_list_or_bucket_is_one_clear_error(settings: Settings, s3_buckets: S3BucketFactory) -> None:
    bucket = s3_buckets.create()

    with pytest.raises(SeedListError, match=rf"cannot read seed list s3://{bucket}/nope: no such object"):
        list(open_seed_list(f"s3://{bucket}/nope", settings))
    with pytest.raises(SeedListError, match="bucket 'no-such-bucket-x1' does not exist"):
        list(open_seed_list("s3://no-such-bucket-x1/seeds.txt", settings))
    with pytest.raises(SeedListError, match="not an s3://bucket/key location"):
        open_seed_list("s3://only-a-bucket", settings)
    with pytest.raises(SeedListError, match="cannot read seed list /no/such/file"):
        list(open_seed_list("/no/such/file", settings))
