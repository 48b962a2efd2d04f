"""The sites ``crawl_vs_scrapy.py`` crawls, each in a process of its own, and what their request logs say.

- ``real``: three real sites unpacked from pinned public repositories (``real_sites.py``), the headline.
- ``sample``: the synthetic sample site (``dualplane sample-site``), whose pages cost far less to
  extract than real ones.

Both serve ``/_log`` (every request with its time and status) and ``/_stats/reset``; :func:`read_log`
turns a crawl's log into its figures: pages answered, time span, and the site's timeline (requests
per second, requests in the first 10 s, the longest quiet gap).
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
FIRST_S = 10


class Site:
    """A site server in a child process; ``description`` is the JSON it printed once listening."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE)
        assert self.process.stdout is not None
        text = ""
        for line in self.process.stdout:  # the description, printed (indented) once the site is up
            text += line.decode()
            if line.rstrip() == b"}":
                break
        if not text:
            raise SystemExit(f"the {name} site did not start (exit status {self.process.wait()})")
        self.description: dict[str, Any] = json.loads(text)
        self.urls: list[str] = self.description["urls"]
        self.seeds: list[str] = self.description["seeds"]

    @classmethod
    def real(cls, mirror_root: Path, cache_dir: Path, names: str = "all", latency_ms: int = 20) -> Site:
        command = [
            sys.executable,
            str(HERE / "real_sites.py"),
            "--mirror-root",
            str(mirror_root),
            "--cache-dir",
            str(cache_dir),
            "--sites",
            names,
            "--latency-ms",
            str(latency_ms),
        ]
        return cls("real", command)

    @classmethod
    def sample(cls, hosts: int, pages_per_host: int, latency_ms: int = 20) -> Site:
        command = [
            sys.executable,
            "-m",
            "dualplane",
            "sample-site",
            "--hosts",
            str(hosts),
            "--pages",
            str(pages_per_host),
            "--random-seed",
            "21",
            "--latency",
            f"{latency_ms}ms",
            "--json",
        ]
        return cls("sample", command)

    def label(self) -> str:
        if self.name == "sample":
            return f"the sample site ({len(self.urls)} hosts)"
        names = ", ".join(site["site"]["name"] for site in self.description["sites"])
        return f"the real sites ({names})"

    def reset(self) -> None:
        httpx.post(f"{self.urls[0]}/_stats/reset", timeout=10)

    def log(self) -> SiteLog:
        """The requests since the last :meth:`reset`, of every host."""
        entries = httpx.get(f"{self.urls[0]}/_log", timeout=120).json()["entries"]
        return read_log(entries)

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


@dataclass(frozen=True)
class SiteLog:
    """One crawl as the site saw it. Times are epoch seconds; ``pages`` are answers 200 to anything
    but robots.txt; ``per_second`` counts requests in each second from the first."""

    pages: int
    first: float
    last_page: float
    by_status: dict[str, int]
    first_10s: int
    longest_gap_s: float
    per_second: list[int]
    duration_ms_p50_p90: tuple[float, float]

    def timeline(self) -> dict[str, Any]:
        return {
            "requests": sum(self.by_status.values()),
            "by_status": self.by_status,
            "first_10s": self.first_10s,
            "longest_gap_s": round(self.longest_gap_s, 2),
            "peak_per_s": max(self.per_second, default=0),
            "per_second": self.per_second,
        }


def read_log(entries: list[dict[str, Any]]) -> SiteLog:
    if not entries:
        raise SystemExit("the site saw no request: the crawler never reached it")
    times = sorted(entry["time"] for entry in entries)
    first = times[0]
    pages = [e for e in entries if e["status"] == 200 and e["path"] != "/robots.txt"]
    by_status: dict[str, int] = {}
    for entry in entries:
        by_status[str(entry["status"])] = by_status.get(str(entry["status"]), 0) + 1
    per_second = [0] * (int(times[-1] - first) + 1)
    for stamp in times:
        per_second[int(stamp - first)] += 1
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    durations = sorted(entry["duration_ms"] for entry in entries)
    return SiteLog(
        pages=len(pages),
        first=first,
        last_page=max((e["time"] for e in pages), default=first),
        by_status=dict(sorted(by_status.items())),
        first_10s=sum(1 for stamp in times if stamp < first + FIRST_S),
        longest_gap_s=max(gaps, default=0.0),
        per_second=per_second,
        duration_ms_p50_p90=(durations[len(durations) // 2], durations[int(len(durations) * 0.9)]),
    )
