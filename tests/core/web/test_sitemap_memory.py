"""A protocol-maximum sitemap (50,000 URLs) is parsed in flat memory: the tree never grows.

Measured as the growth of the process's peak RSS (reset through /proc) over its RSS before the
parse: lxml's tree lives in C, where tracemalloc does not look. The same body parsed whole is the
contrast that shows the measure can fail. ``benchmarks/sitemap_memory.py`` measures a 48 MiB one.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from lxml import etree  # type: ignore[import-untyped]

from core.web.sitemaps import SitemapParser

pytestmark = pytest.mark.unit

URLS = 50_000
STATUS = Path("/proc/self/status")


def sitemap(urls: int) -> bytes:
    entries = (
        f"<url><loc>https://shop.example/products/{i}</loc><lastmod>2026-11-28</lastmod></url>\n"
        for i in range(urls)
    )
    return (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(entries).encode()
        + b"</urlset>"
    )


def kib(field: str) -> int:
    line = next(line for line in STATUS.read_text().splitlines() if line.startswith(f"{field}:"))
    return int(line.split()[1])


def peak_growth_mib(parse: Callable[[], int]) -> tuple[int, float]:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS: the peak counts only the parse
    before = kib("VmRSS")
    count = parse()
    return count, (kib("VmHWM") - before) / 1024


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc peak-RSS reset")
def test_50000_urls_parse_in_flat_memory_where_the_whole_tree_takes_tens_of_mib() -> None:
    body = sitemap(URLS)
    streamed, streamed_mib = peak_growth_mib(
        lambda: sum(1 for _ in SitemapParser(io.BytesIO(body), url="s").entries())
    )
    whole, whole_mib = peak_growth_mib(lambda: len(etree.fromstring(body)))
    assert streamed == whole == URLS
    assert streamed_mib < 4, f"the streamed parse grew the peak RSS by {streamed_mib:.1f} MiB"
    assert whole_mib > 5 * max(streamed_mib, 1), (streamed_mib, whole_mib)
