"""The whole pipeline against Scrapy + trafilatura, crawling the same local site in the same run.

The site: the sample site (``dualplane sample-site``, its own process) with ``--hosts`` hosts of
``--pages-per-host`` products and articles each, 20 ms latency, about 34 links a page. Both crawlers
start at every host's home page, obey robots.txt, follow every link to the site's hosts, use
``--concurrency`` requests in flight at most and no politeness delay.

- **Scrapy + trafilatura** (``scrapy_peer.py``): one process, trafilatura's main text per page
  written to a JSON-lines feed.
- **dualplane**: ``dualplane run`` of the frontier, fetcher, extractor and throttle, as processes,
  on the embedded stack (started if needed), in a private namespace: every raw page durable in
  ``pages.raw`` and every record (Avro) in ``records``.

Per crawl: pages/s (pages over the time from the site's first request to the last page fetched, or,
for dualplane, to the last record committed, whichever is later), CPU seconds a page of the
crawler's own processes (process trees, during the crawl) and, for dualplane, of the brokers apart,
and the crawler's peak RSS (summed over its processes). Rounds alternate the two crawlers; figures
are medians. ``--scaling`` adds a table of dualplane alone over frontier shards and processes.

    .venv/bin/python benchmarks/crawl_vs_scrapy.py --rounds 3 --scaling [--json]

Needs the embedded stack (``dualplane stack up``) and Scrapy (a dev dependency).
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from brokers import amqp
from brokers.amqp.messages import JobSpec
from brokers.amqp.publisher import confirmed_channel
from brokers.amqp.topology import Topology
from brokers.kafka.reader import read_to_end
from control_plane.frontier.jobs import FinishRule
from control_plane.frontier.progress import ProgressReader
from control_plane.frontier.submit import submit_job
from core.settings import FetchSettings, LimitSettings, Settings
from core.web.urls import domain_of
from dualplane.namespaces import drop_namespace, private_namespace
from dualplane.stack import LocalStack

HERE = Path(__file__).resolve().parent
SERVICES = ("frontier", "fetcher", "extractor", "throttle")
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Crawl:
    """One crawl's figures."""

    crawler: str
    pages: int
    seconds: float
    cpu_s: float  # the crawler's own processes
    broker_cpu_s: float = 0.0
    peak_rss_mib: float = 0.0
    records: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_s / self.pages if self.pages else 0.0

    @property
    def broker_cpu_ms_per_page(self) -> float:
        return 1000 * self.broker_cpu_s / self.pages if self.pages else 0.0


# -- processes --------------------------------------------------------------------------------


def tree(pid: int) -> list[int]:
    """``pid`` and every live descendant."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def cpu_s(pids: list[int]) -> float:
    """User + system CPU of each process in ``pids`` and of its reaped children."""
    total = 0.0
    for pid in pids:
        for process in tree(pid):
            try:
                fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += sum(int(value) for value in fields[11:15]) / TICKS  # utime stime cutime cstime
    return total


def peak_rss_mib(pids: list[int]) -> float:
    total_kib = 0
    for pid in pids:
        for process in tree(pid):
            try:
                status = Path(f"/proc/{process}/status").read_text()
            except OSError:
                continue
            total_kib += next(
                (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")), 0
            )
    return total_kib / 1024


# -- the site ---------------------------------------------------------------------------------


class Site:
    """The sample site in a process of its own, and what its request log says."""

    def __init__(self, hosts: int, pages_per_host: int) -> None:
        command = [sys.executable, "-m", "dualplane", "sample-site", "--hosts", str(hosts), "--pages",
                   str(pages_per_host), "--seed", "21", "--latency-ms", "20", "--json"]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.process.stdout is not None
        text = ""
        for line in self.process.stdout:  # the description, printed (indented) once the site is up
            text += line.decode()
            if line.rstrip() == b"}":
                break
        described = json.loads(text)
        self.urls: list[str] = described["urls"]
        self.seeds: list[str] = described["seeds"]

    def reset(self) -> None:
        httpx.post(f"{self.urls[0]}/_stats/reset", timeout=10)

    def pages_and_span(self) -> tuple[int, float, float]:
        """(pages answered 200, first request time, last page time) since the last reset."""
        entries = httpx.get(f"{self.urls[0]}/_log", timeout=60).json()["entries"]
        self.last_durations_ms = sorted(e["duration_ms"] for e in entries)
        pages = [e for e in entries if e["status"] == 200 and not e["path"].startswith(("/_", "/robots.txt"))]
        times = [e["time"] for e in entries]
        return len(pages), min(times), max(e["time"] for e in pages)

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


# -- the crawlers -----------------------------------------------------------------------------


def crawl_scrapy(site: Site, concurrency: int, work: Path) -> Crawl:
    site.reset()
    feed = work / f"items-{uuid.uuid4().hex[:6]}.jsonl"
    command = [sys.executable, str(HERE / "scrapy_peer.py"), "--seeds", *site.seeds, "--out", str(feed),
               "--concurrency", str(concurrency)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    pages, first, last = site.pages_and_span()
    items = sum(1 for _ in feed.open()) if feed.exists() else 0
    print("   scrapy site duration p50/p90 ms", _percentiles(site.last_durations_ms), file=sys.stderr)
    return Crawl("scrapy", pages, last - first, usage.ru_utime + usage.ru_stime,
                 peak_rss_mib=usage.ru_maxrss / 1024, records=items)  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """How many processes of each dualplane service, and frontier shards."""

    shards: int = 1
    fetchers: int = 1
    extractors: int = 1

    def label(self) -> str:
        return f"{self.shards} shard(s), {self.fetchers} fetcher(s), {self.extractors} extractor(s)"


def crawl_dualplane(
    site: Site,
    concurrency: int,
    layout: Layout,
    work: Path,
    profile: Path | None = None,
    *,
    gil: bool = False,
) -> Crawl:
    settings = _settings(work, concurrency, layout)
    env = {**os.environ, **settings.to_env()}
    services = []
    for name, processes in zip(SERVICES, (layout.shards, layout.fetchers, layout.extractors, 1), strict=True):
        command = [sys.executable, "-m", "dualplane", "run", name, "--log-level", "warning"]
        if processes > 1:
            command += ["--processes", str(processes)]
        services.append(
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
    brokers = _broker_pids(settings)
    try:
        time.sleep(8)  # imports, topic and queue declarations, throttle view: before the clock starts
        site.reset()
        spies = _profile(services, profile, gil) if profile is not None else []
        cpu_before, broker_before = cpu_s([p.pid for p in services]), cpu_s(list(brokers.values()))
        each_broker_before = {name: cpu_s([pid]) for name, pid in brokers.items()}
        each_before = [cpu_s([p.pid]) for p in services]
        job = f"bench-{uuid.uuid4().hex[:6]}"
        _submit(settings, job, site.seeds)
        rule = FinishRule.from_settings(settings, quiet_s=2)
        # One reader for the crawl: a new Kafka consumer reading the topic from its start every 0.5 s
        # was load on the broker and the cores that Scrapy's run does not carry.
        with ProgressReader(settings) as progress:
            while not rule.finished(progress.job(job)):
                time.sleep(0.5)
        cpu = cpu_s([p.pid for p in services]) - cpu_before
        each = [cpu_s([p.pid]) - before for p, before in zip(services, each_before, strict=True)]
        broker_cpu = cpu_s(list(brokers.values())) - broker_before
        each_broker = {name: cpu_s([pid]) - each_broker_before[name] for name, pid in brokers.items()}
        rss = peak_rss_mib([p.pid for p in services])
        for spy in spies:  # py-spy writes its samples when interrupted
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
    finally:
        for process in services:
            process.send_signal(signal.SIGTERM)
        for process in services:
            process.wait(90)
    pages, first, last_page = site.pages_and_span()
    record_times = [m.timestamp()[1] / 1000 for m in read_to_end(settings.kafka, settings.topics.records)]
    raw = sum(1 for _ in read_to_end(settings.kafka, settings.topics.pages_raw))
    drop_namespace(settings)
    end = max(last_page, max(record_times, default=last_page))
    print("   dualplane site duration p50/p90 ms", _percentiles(site.last_durations_ms), file=sys.stderr)
    return Crawl("dualplane", pages, end - first, cpu, broker_cpu, rss, len(record_times),
                 extra={"layout": layout.label(), "raw_pages": raw,
                        "cpu_ms_per_page": {name: round(1000 * c / max(pages, 1), 1) for name, c in
                                            zip(SERVICES, each, strict=True)},
                        "broker_cpu_ms_per_page": {name: round(1000 * c / max(pages, 1), 1)
                                                   for name, c in each_broker.items()}})  # fmt: skip


def _profile(
    services: list[subprocess.Popen[bytes]], out: Path, gil: bool = False
) -> list[subprocess.Popen[bytes]]:
    """Sample every process of each service (and its children) with py-spy at 50 Hz; with ``gil``
    only threads holding the GIL (Python's CPU, without time blocked in C calls and syscalls)."""
    spy = str(Path(sys.executable).parent / "py-spy")
    spies = []
    for name, process in zip(SERVICES, services, strict=True):
        command = [spy, "record", "--pid", str(process.pid), "--subprocesses", "--rate", "50",
                   "--format", "raw", "--output", str(out / f"{name}.txt")]  # fmt: skip
        command += ["--gil"] if gil else []
        spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return spies


def _percentiles(values: list[float]) -> tuple[float, float]:
    if not values:
        return (0.0, 0.0)
    return values[len(values) // 2], values[int(len(values) * 0.9)]


def _settings(work: Path, concurrency: int, layout: Layout) -> Settings:
    base = private_namespace(Settings.from_env(), f"vs-{uuid.uuid4().hex[:8]}", work / uuid.uuid4().hex[:6])
    return base.model_copy(
        update={
            "queues": base.queues.model_copy(update={"frontier_shards": layout.shards}),
            "limits": LimitSettings(
                domain_concurrency=16,
                domain_delay_ms=0,
                fetch_concurrency=max(1, concurrency // layout.fetchers),
            ),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0, permit_wait_s=0.2),
            "frontier": base.frontier.model_copy(update={"outstanding_per_slot": 64}),
            "throttle": base.throttle.model_copy(update={"snapshot_path": str(work / "throttle.json")}),
        }
    )


def _broker_pids(settings: Settings) -> dict[str, int]:
    stack = LocalStack(settings)
    return {status.name: status.pid for status in stack.status() if status.pid}


def _submit(settings: Settings, job: str, seeds: list[str]) -> None:
    connection = amqp.connect(settings.amqp)
    try:
        spec = JobSpec(job_id=job, allowed_domains=tuple(domain_of(seed) for seed in seeds))
        submit_job(confirmed_channel(connection), Topology(settings.queues), spec, seeds)
    finally:
        connection.close()


# -- report -----------------------------------------------------------------------------------


def median_crawl(crawls: list[Crawl]) -> dict[str, float]:
    return {
        "pages": statistics.median(c.pages for c in crawls),
        "pages_per_s": statistics.median(c.pages_per_s for c in crawls),
        "cpu_ms_per_page": statistics.median(c.cpu_ms_per_page for c in crawls),
        "broker_cpu_ms_per_page": statistics.median(c.broker_cpu_ms_per_page for c in crawls),
        "peak_rss_mib": statistics.median(c.peak_rss_mib for c in crawls),
        "records": statistics.median(c.records for c in crawls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages-per-host", type=int, default=250)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layout", default="1,1,1", help="shards,fetchers,extractors of the head-to-head")
    parser.add_argument(
        "--scaling", action="store_true", help="also: 1/2/4 shards, 1/2 fetchers and extractors"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", type=Path, help="write py-spy samples of every service here")
    parser.add_argument("--gil", action="store_true", help="profile only threads holding the GIL")
    parser.add_argument("--no-scrapy", action="store_true", help="dualplane alone (profiling runs)")
    args = parser.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    LocalStack(Settings.from_env()).up()
    layout = Layout(*(int(n) for n in args.layout.split(",")))
    site = Site(args.hosts, args.pages_per_host)
    report: dict[str, Any] = {"site": {"hosts": args.hosts, "pages_per_host": args.pages_per_host},
                              "concurrency": args.concurrency}  # fmt: skip
    try:
        with tempfile.TemporaryDirectory(prefix="dualplane-vs-") as tmp:
            work = Path(tmp)
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(crawl_dualplane(site, args.concurrency, layout, work, args.profile, gil=args.gil))
                if args.no_scrapy:
                    extra = ours[-1].extra
                    rate = f"{ours[-1].pages_per_s:.1f} pages/s"
                    cpu = f"CPU ms/page {extra['cpu_ms_per_page']}, brokers {extra['broker_cpu_ms_per_page']}"
                    _say(args, f"  round: dualplane {rate}, {cpu}")
                    continue
                theirs.append(crawl_scrapy(site, args.concurrency, work))
                rates = f"dualplane {ours[-1].pages_per_s:.1f} pages/s, scrapy {theirs[-1].pages_per_s:.1f}"
                _say(
                    args,
                    f"  round: {rates}; dualplane CPU ms/page {ours[-1].extra['cpu_ms_per_page']}, "
                    f"brokers {ours[-1].extra['broker_cpu_ms_per_page']}",
                )
            if args.no_scrapy:
                return
            report["dualplane"], report["scrapy"] = median_crawl(ours), median_crawl(theirs)
            report["ratio"] = statistics.median(
                o.pages_per_s / t.pages_per_s for o, t in zip(ours, theirs, strict=True)
            )
            report["rounds"] = {"dualplane": [asdict(c) for c in ours], "scrapy": [asdict(c) for c in theirs]}
            if args.scaling:
                report["scaling"] = _scaling(site, args, work)
    finally:
        site.close()
    _print(report, args)


def _scaling(site: Site, args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    layouts = [
        Layout(1, 1, 1),
        Layout(2, 1, 1),
        Layout(4, 1, 1),
        Layout(1, 2, 1),
        Layout(1, 1, 2),
        Layout(2, 2, 2),
    ]
    rows = []
    for layout in layouts:
        crawls = [
            crawl_dualplane(site, args.concurrency, layout, work) for _ in range(max(1, args.rounds - 1))
        ]
        rows.append({"layout": layout.label(), **median_crawl(crawls)})
        _say(args, f"  scaling: {layout.label()}: {rows[-1]['pages_per_s']:.1f} pages/s")
    return rows


def _say(args: argparse.Namespace, line: str) -> None:
    if not args.json:
        print(line, file=sys.stderr, flush=True)


def _print(report: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return
    pages = int(report["dualplane"]["pages"])
    print(f"crawl of the sample site ({pages} pages, {args.hosts} hosts), concurrency {args.concurrency}, "
          f"no delay, median of {args.rounds} rounds")  # fmt: skip
    print(
        f"{'':24}{'pages/s':>9}{'CPU ms/page':>13}{'brokers ms/page':>17}{'peak RSS MiB':>14}{'records':>9}"
    )
    for name in ("dualplane", "scrapy"):
        r = report[name]
        print(f"{name:24}{r['pages_per_s']:9.1f}{r['cpu_ms_per_page']:13.1f}{r['broker_cpu_ms_per_page']:17.1f}"
              f"{r['peak_rss_mib']:14.0f}{r['records']:9.0f}")  # fmt: skip
    print(f"ratio dualplane / scrapy (pages/s): {report['ratio']:.2f}x  (goal >= 1.0, beyond: 1.5)")
    for row in report.get("scaling", []):
        print(
            f"  {row['layout']:48}{row['pages_per_s']:8.1f} pages/s {row['cpu_ms_per_page']:8.1f} ms CPU/page"
        )


if __name__ == "__main__":
    main()
