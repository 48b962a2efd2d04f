"""Fetch throughput on the sample site with one and two fetcher processes, and CPU per page.

Runs the real pipeline (``dualplane run frontier|fetcher|extractor`` as processes) against the
embedded stack, with private queue and topic names, crawling a sample site big enough to keep
the fetchers busy. Politeness is opened wide (P_d 16, no delay) so the figure is the fetcher's
own throughput, not the politeness budget. Reports the median of ``--rounds`` crawls:

- pages/s: pages in ``pages.raw`` divided by the time from the first to the last fetch event;
- CPU s/page: user + system CPU of the fetcher processes divided by the pages fetched.

    .venv/bin/python benchmarks/fetch_throughput.py --pages 400 --rounds 3 [--json]

Needs the stack up (``dualplane stack up``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from dualplane.brokers.kafka.reader import read_to_end
from dualplane.control_plane.frontier import JobClient
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.namespaces import drop_namespace, private_namespace
from dualplane.sample_site import SampleSite, SiteSpec

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def private_settings(work: Path) -> Settings:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    settings = private_namespace(Settings.from_env(), prefix, work / prefix)
    return settings.model_copy(
        update={
            "frontier": settings.frontier.model_copy(update={"outstanding_per_slot": 64}),
            "limits": LimitSettings(domain_concurrency=16, domain_delay_ms=0, fetch_concurrency=64),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0, permit_wait_s=0.2),
        }
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def fetch_span_s(settings: Settings) -> tuple[int, float]:
    """(pages in pages.raw, seconds between the first and last fetch event's timestamps)."""
    pages = sum(1 for _ in read_to_end(settings.kafka, settings.topics.pages_raw))
    times = [message.timestamp()[1] for message in read_to_end(settings.kafka, settings.topics.fetch_events)]
    return pages, (max(times) - min(times)) / 1000 if len(times) > 1 else 0.0


def wait_finished(settings: Settings, job_id: str, timeout_s: float = 600) -> None:
    """Until the job is finished by the one rule (:class:`FinishRule`: pages fetched, records committed)."""
    progress, verdict = JobClient(settings).wait(job_id, timeout_s=timeout_s)
    if not verdict.finished:
        raise TimeoutError(f"job {job_id} did not finish ({verdict.why}): {progress}")


def one_crawl(fetchers: int, pages_per_host: int, work: Path) -> dict[str, float]:
    settings = private_settings(work)
    env = {**os.environ, **settings.to_env()}
    processes: dict[str, list[subprocess.Popen[bytes]]] = {"frontier": [], "extractor": [], "fetcher": []}
    with SampleSite(SiteSpec(seed=21, hosts=4, pages_per_host=pages_per_host, latency_ms=10)) as site:
        try:
            for service, count in (("frontier", 1), ("extractor", 1), ("fetcher", fetchers)):
                for _ in range(count):
                    processes[service].append(subprocess.Popen(
                        [sys.executable, "-m", "dualplane", "run", service, "--processes", "1",
                         "--log-level", "warning"],
                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    ))  # fmt: skip
            time.sleep(3)
            JobClient(settings).crawl(site.seeds, job_id="bench")
            wait_finished(settings, "bench")
            cpu_s = sum(cpu_seconds(p.pid) for p in processes["fetcher"])
        finally:
            for group in processes.values():
                for process in group:
                    process.send_signal(signal.SIGTERM)
            for group in processes.values():
                for process in group:
                    process.wait(60)
    pages, span_s = fetch_span_s(settings)
    drop_namespace(settings)
    return {"pages": pages, "span_s": span_s, "pages_per_s": pages / span_s, "cpu_s_per_page": cpu_s / pages}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=400, help="pages per host (4 hosts)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="dualplane-bench-") as work:
        for fetchers in (1, 2):
            rounds = [one_crawl(fetchers, args.pages, Path(work)) for _ in range(args.rounds)]
            report[f"{fetchers}_fetcher"] = {
                key: statistics.median(r[key] for r in rounds)
                for key in ("pages", "pages_per_s", "cpu_s_per_page")
            }
    report["scaling_2_vs_1"] = {
        "ratio": report["2_fetcher"]["pages_per_s"] / report["1_fetcher"]["pages_per_s"]
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"fetch throughput on the sample site, median of {args.rounds} crawls (2 cores, all services)")
    for name in ("1_fetcher", "2_fetcher"):
        figures = report[name]
        cpu_ms = figures["cpu_s_per_page"] * 1000
        label = name.replace("_", " ")
        rate, pages = figures["pages_per_s"], figures["pages"]
        print(f"  {label}: {rate:7.1f} pages/s, {cpu_ms:6.2f} ms CPU/page ({pages:.0f} pages)")
    print(f"  2 fetchers vs 1: {report['scaling_2_vs_1']['ratio']:.2f}x")


if __name__ == "__main__":
    main()
