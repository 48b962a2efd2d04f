"""A protocol-maximum sitemap (50,000 URLs) is parsed in flat memory: the tree never grows.

Measured by ``benchmarks/sitemap_memory.py`` in a fresh process, as the growth of its peak RSS over
its RSS before the parse: lxml's tree lives in C, where tracemalloc does not look, and a process that
ran other tests could reuse memory it freed and hide a growing tree. The same file parsed whole is
the contrast that shows the measure can fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.unit

URLS = 50_000
SCRIPT = REPO_ROOT / "benchmarks" / "sitemap_memory.py"


def write(path: Path, urls: int) -> None:
    with path.open("w") as out:
        out.write('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
        out.writelines(
            f"<url><loc>https://shop.example/products/{i}</loc><lastmod>2026-11-28</lastmod></url>\n"
            for i in range(urls)
        )
        out.write("</urlset>\n")


def parse_in_child(path: Path, *options: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, str(SCRIPT), "--parse-only", str(path), *options]
    done = subprocess.run(command, env=env, capture_output=True, timeout=120, check=True)
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc peak-RSS reset")
def test_50000_urls_parse_in_flat_memory_where_the_whole_tree_takes_tens_of_mib(tmp_path: Path) -> None:
    write(tmp_path / "sitemap.xml", URLS)
    streamed = parse_in_child(tmp_path / "sitemap.xml")
    whole = parse_in_child(tmp_path / "sitemap.xml", "--whole")
    assert streamed["entries"] == whole["entries"] == URLS
    assert streamed["peak_rss_growth_mib"] < 4, streamed
    assert whole["peak_rss_growth_mib"] > 5 * max(streamed["peak_rss_growth_mib"], 1), (streamed, whole)
