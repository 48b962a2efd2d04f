"""Memory and speed of parsing one protocol-maximum sitemap: 50,000 URLs, near 50 MB uncompressed.

Writes a sitemap of ``--urls`` entries (each ``<loc>`` padded to ``--loc-chars``, with a ``lastmod``)
to a temporary file, plain or ``--gzip``, then parses it with :class:`core.web.sitemaps.SitemapParser`
(streamed: each entry cleared once read) and reports the growth of the process's peak RSS over its
RSS before parsing, the CPU time and the entries per CPU second. ``--whole`` parses the same file
the naive way (``lxml.etree.parse``, the whole tree in memory), for contrast.

Each of ``--rounds`` parses the same file in a fresh process (freed memory stays in a process's RSS,
so a second parse in the same one would show no growth at all); medians are quoted.

    .venv/bin/python benchmarks/sitemap_memory.py --urls 50000 --loc-chars 950 --rounds 3 [--gzip] [--whole]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from lxml import etree  # type: ignore[import-untyped]

from dualplane.core.web.sitemaps import SitemapParser

HEAD = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
)


def write_sitemap(out: IO[bytes], urls: int, loc_chars: int) -> None:
    out.write(HEAD)
    for i in range(urls):
        loc = f"https://shop.example/products/{i}?"
        loc += "p" * max(loc_chars - len(loc), 0)
        out.write(f"<url><loc>{loc}</loc><lastmod>2026-11-28T12:00:{i % 60:02d}Z</lastmod></url>\n".encode())
    out.write(b"</urlset>\n")


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure(path: Path, whole: bool) -> dict[str, Any]:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM: the peak counts only the parse
    before_kib = status_kib("VmRSS")
    cpu_s = time.process_time()
    with path.open("rb") as stream:
        if whole:
            tree = etree.parse(stream)
            entries = sum(1 for _ in tree.getroot())
        else:
            entries = sum(1 for _ in SitemapParser(stream, url=str(path)).entries())
    cpu_s = time.process_time() - cpu_s
    growth_kib = status_kib("VmHWM") - before_kib
    return {"entries": entries, "peak_rss_growth_mib": round(growth_kib / 1024, 2), "cpu_s": round(cpu_s, 3),
            "entries_per_cpu_s": round(entries / cpu_s)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=50_000)
    parser.add_argument("--loc-chars", type=int, default=950)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--whole", action="store_true", help="the naive whole-tree parse, for contrast")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--parse-only", type=Path, help=argparse.SUPPRESS)  # one round, in a child
    args = parser.parse_args()
    if args.parse_only is not None:
        print(json.dumps(measure(args.parse_only, args.whole)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("sitemap.xml.gz" if args.gzip else "sitemap.xml")
        with gzip.open(path, "wb", compresslevel=1) if args.gzip else path.open("wb") as out:
            write_sitemap(out, args.urls, args.loc_chars)
        figures = {"file_mib": round(path.stat().st_size / 2**20, 2), "gzip": args.gzip, "whole": args.whole}
        rounds = [_child_round(path, args.whole) for _ in range(args.rounds)]
        figures["rounds"] = args.rounds
        figures |= {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    if args.json:
        print(json.dumps(figures))
    else:
        print("  ".join(f"{key}={value}" for key, value in figures.items()))


def _child_round(path: Path, whole: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--parse-only", str(path), *(["--whole"] if whole else [])]
    figures: dict[str, Any] = json.loads(subprocess.run(command, capture_output=True, check=True).stdout)
    return figures


if __name__ == "__main__":
    main()
