"""Extraction CPU inside the extractor service during a crawl, against trafilatura alone on the same pages.

``crawl_vs_scrapy.py`` uses these for each dualplane crawl of the real sites:

- :func:`metrics_ports` gives the extractor processes a Prometheus endpoint each (``DUALPLANE_METRICS_PORT``;
  ``dualplane run`` adds the child's index), and :func:`in_service` reads, before the services stop, what
  they recorded: ``dualplane_extract_cpu_seconds`` (the extracting thread's CPU per page, summed over
  every extractor process), as CPU ms/page;
- :func:`trafilatura_alone` reads the site's request log, takes every page it answered 200, and runs
  ``trafilatura.extract`` (its defaults) on each one's HTML in a worker process of
  ``extraction_speed.py``: CPU ms/page of the peer on the same pages, in the same run.

Their ratio is the service's cost per page against trafilatura alone, as ``extraction_speed.py`` measures
it in a script, but on the pages a crawl reaches and inside the service.
"""

from __future__ import annotations

import pickle
import socket
import tempfile
from pathlib import Path
from typing import Any

import httpx
from extract_pages import FETCHED_AT
from extraction_speed import TRAFILATURA, run_worker

from dualplane.data_plane.extract.offline import raw_page

REPO = Path(__file__).resolve().parent.parent
SCRAPED_PORTS = 8
"""Endpoints read from the base port on: one per ``dualplane run`` child (an extractor per core, and one
for the other services)."""
CPU_METRIC = "dualplane_extract_cpu_seconds"


def metrics_ports(count: int = SCRAPED_PORTS) -> int:
    """The first of ``count`` consecutive free loopback ports (checked by binding each)."""
    for base in range(29_000, 60_000, count):
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise SystemExit(f"no {count} consecutive free ports on 127.0.0.1 for the services' metrics")


def in_service(base_port: int, count: int = SCRAPED_PORTS) -> dict[str, float]:
    """Pages the running extractors recorded and their extraction CPU, summed over every endpoint found."""
    pages = seconds = 0.0
    for port in range(base_port, base_port + count):
        try:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        except httpx.HTTPError:
            continue  # no process on that port (fewer children)
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == f"{CPU_METRIC}_count":
                pages += float(value)
            elif name == f"{CPU_METRIC}_sum":
                seconds += float(value)
    return {"pages": pages, "cpu_ms_per_page": round(1000 * seconds / pages, 2) if pages else 0.0}


def served_pages(site_url: str, description: dict[str, Any], cache_dir: Path) -> list[Path]:
    """The files of the real sites' pages answered 200 since the log's last reset (each once)."""
    entries = httpx.get(f"{site_url}/_log", timeout=120).json()["entries"]
    roots = [cache_dir / served["site"]["name"] for served in description["sites"]]
    found: dict[Path, None] = {}
    for entry in entries:
        if entry["status"] != 200 or entry["path"] == "/robots.txt":
            continue
        path = roots[entry["host"]] / entry["path"].split("?", 1)[0].lstrip("/")
        found[path / "index.html" if path.is_dir() else path] = None
    return [path for path in found if path.is_file()]


def trafilatura_alone(paths: list[Path]) -> dict[str, float]:
    """CPU ms/page of ``trafilatura.extract`` alone on the HTML of ``paths``, in a worker process."""
    pages = {
        str(path): raw_page(
            path.read_bytes(), f"http://site.invalid/{n}", fetched_at=FETCHED_AT, charset="utf-8"
        )
        for n, path in enumerate(paths)
    }
    with tempfile.TemporaryDirectory(prefix="dualplane-peer-") as scratch:
        pages_file = Path(scratch, "pages")
        pages_file.write_bytes(pickle.dumps(pages))
        result = run_worker(str(REPO), pages_file, Path(scratch, "out"), False, TRAFILATURA)
    return {"pages": len(pages), "cpu_ms_per_page": round(result["ms"], 2)}
