"""``dualplane crawl --seeds-file s3://…``: a gzip list streamed from S3, bad lines reported, flat memory."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.storage import s3
from dualplane.core.settings import Settings
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.e2e]

MIB = 1024 * 1024


@pytest.fixture
def seeding(
    control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory
) -> Iterator[tuple[Settings, str]]:
    """Settings with a private control plane (no frontier runs: seeds wait in discovery) and a bucket."""
    yield control_plane.settings(), s3_buckets.create()


def _put_list(settings: Settings, bucket: str, key: str, urls: Iterator[bytes]) -> str:
    body = gzip.compress(b"".join(urls), compresslevel=1)
    s3.client(settings.s3).put_object(Bucket=bucket, Key=key, Body=body)
    return f"s3://{bucket}/{key}"


def _crawl(settings: Settings, tmp_path: Path, *args: str) -> tuple[int, str, str, int]:
    """``dualplane crawl … --json`` as a child process: exit code, stdout, stderr, its peak RSS (bytes)."""
    command = [sys.executable, "-m", "dualplane", "crawl", *args, "--json"]
    env = {**os.environ, **settings.to_env(), "COLUMNS": "200"}
    out, err = tmp_path / "crawl.out", tmp_path / "crawl.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(command, env=env, cwd=REPO_ROOT, stdout=stdout, stderr=stderr)
        # wait4 on this pid: the child's own peak, where RUSAGE_CHILDREN is the largest of all children.
        _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, out.read_text(), err.read_text(), usage.ru_maxrss * 1024


def test_a_gzip_seed_list_in_s3_is_seeded_and_its_bad_lines_reported(
    seeding: tuple[Settings, str], tmp_path: Path
) -> None:
    settings, bucket = seeding
    lines = [b"https://a.example/1\n", b"not a url\n", b"# comment\n", b"https://b.example/2\n", b"\xff\n"]
    uri = _put_list(settings, bucket, "seeds/small.txt.gz", iter(lines))

    code, stdout, stderr, _peak = _crawl(settings, tmp_path, "--seeds-file", uri, "--job", "seeded")

    assert code == 0, stderr
    assert (json.loads(stdout)["seeds"], json.loads(stdout)["bad_lines"]) == (2, 2)
    assert "2 bad line(s) of 5" in stderr
    assert "line 2: whitespace inside the URL: 'not a url'" in stderr
    assert "line 5: not UTF-8" in stderr
