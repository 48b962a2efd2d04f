"""``dualplane crawl --seeds-file s3://…``: a gzip list streamed from S3, bad lines reported, flat memory."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.connectors.storage import s3
from dualplane.core.settings import Settings
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.e2e]

MIB = 1024 * 1024
SEEDS = int(os.environ.get("DUALPLANE_TEST_SEED_LIST_URLS", "1000000"))


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


# Spawns the command from a small interpreter and writes the command's own peak RSS (KiB) to a file.
# Measured from pytest directly, a forked child's peak would start at pytest's own size (ru_maxrss
# keeps the high-water mark of the pre-exec image), hiding the command's growth.
_PEAK_OF = (
    "import os, sys; pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ); "
    "_, status, usage = os.wait4(pid, 0); open(sys.argv[1], 'w').write(str(usage.ru_maxrss)); "
    "sys.exit(os.waitstatus_to_exitcode(status))"
)


def _crawl(settings: Settings, tmp_path: Path, *args: str) -> tuple[int, str, str, int]:
    """``dualplane crawl … --json`` as a child process: exit code, stdout, stderr, its peak RSS (bytes)."""
    peak = tmp_path / "peak-kib"
    command = [
        sys.executable,
        "-c",
        _PEAK_OF,
        str(peak),
        sys.executable,
        "-m",
        "dualplane",
        "crawl",
        *args,
        "--json",
    ]
    env = {**os.environ, **settings.to_env(), "COLUMNS": "200"}
    done = subprocess.run(
        command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    return done.returncode, done.stdout, done.stderr, int(peak.read_text()) * 1024


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


@pytest.mark.slow
def test_a_million_urls_from_s3_are_seeded_in_flat_memory(
    seeding: tuple[Settings, str], tmp_path: Path
) -> None:
    settings, bucket = seeding
    small = _put_list(
        settings, bucket, "seeds/small.gz", (f"https://h{i}.example/p{i}\n".encode() for i in range(100))
    )
    million = _put_list(
        settings,
        bucket,
        "seeds/million.gz",
        (f"https://h{i % 500}.example/p/{i}\n".encode() for i in range(SEEDS)),
    )
    scope = ("--allow-domain", "example")

    small_code, _, small_err, small_peak = _crawl(settings, tmp_path, "--seeds-file", small, *scope)
    started = time.monotonic()
    code, stdout, stderr, peak = _crawl(settings, tmp_path, "--seeds-file", million, *scope)
    elapsed_s = time.monotonic() - started

    assert small_code == 0 and code == 0, small_err + stderr
    assert json.loads(stdout)["seeds"] == SEEDS
    growth = peak - small_peak
    print(f"\n{SEEDS:,} seeds in {elapsed_s:.0f} s; peak RSS {peak / MIB:.0f} MiB against "
          f"{small_peak / MIB:.0f} MiB for 100 seeds: +{growth / MIB:.1f} MiB")  # fmt: skip
    assert growth < 100 * MIB
