"""The whole pipeline against Scrapy + trafilatura, crawling the same local sites in the same run.

The sites (``crawl_sites.py``), each in its own process, 20 ms latency a response, robots.txt on
every host:

- ``--site real`` (the default, the headline): three real sites from pinned public repositories
  (``real_sites.py``): documentation, a catalogue and a news archive, about 5,500 HTML pages and
  790 MB with their real sizes and links, one host each. Needs their git snapshots under
  ``--mirror-root`` (see ``real_sites.py``).
- ``--site sample``: the sample site (``dualplane sample-site``) with ``--hosts`` hosts of
  ``--pages-per-host`` products and articles each, about 34 links a page; its pages cost a small
  fraction of a real page to extract. ``--site real,sample`` runs both, one row each.

Both crawlers start at every host's home page, obey robots.txt, follow links by the same rules
(dualplane's: see ``scrapy_peer.py``) to the sites' hosts only, use ``--concurrency`` requests in
flight at most and no politeness delay.

- **Scrapy + trafilatura** (``scrapy_peer.py``): one process, trafilatura's main text per page
  written to a JSON-lines feed.
- **dualplane**: ``dualplane run all`` (frontier, fetcher, throttle and S3 sink in one process, an
  extractor process per core) with default settings but for the comparison's (concurrency, no
  delay, loopback allowed),
  or ``--layout S,F,E`` for services in processes of their own (S frontier shards, F fetchers, E
  extractors), on the embedded stack (started if needed), in a private namespace: every raw page
  durable in ``pages.raw`` and every record (Avro) in ``records``.

Per crawl: pages/s (pages answered 200 over the time from the site's first request to the last
page fetched, or, for dualplane, to the last record committed, whichever is later), CPU ms a page of
the crawler's own processes (process trees, during the crawl) and, for dualplane, of the brokers
apart, peak RSS (summed over its processes), records, and the site's timeline: requests in the first
10 s, the longest quiet gap between two requests, requests by status, requests per second (``--json``).
Rounds alternate the two crawlers; figures are medians. ``--scaling`` adds a table of dualplane
alone over layouts.

    .venv/bin/python benchmarks/crawl_vs_scrapy.py --rounds 3 [--site real,sample] [--json]

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

import extractor_cpu
from crawl_sites import Site
from real_sites import DEFAULT_CACHE_DIR, DEFAULT_MIRROR_ROOT

from dualplane.brokers.kafka.reader import read_to_end
from dualplane.connectors.storage import s3
from dualplane.control_plane.frontier import JobClient, Look
from dualplane.control_plane.frontier.client import BROKERS_UNREACHABLE
from dualplane.core.settings import Settings
from dualplane.namespaces import drop_namespace, private_namespace
from dualplane.stack import LocalStack

HERE = Path(__file__).resolve().parent
SERVICES = ("frontier", "fetcher", "extractor", "throttle")
TICKS = os.sysconf("SC_CLK_TCK")
WAIT_S = 3600.0  # a round that takes longer is broken: no figure comes of it


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


# -- the crawlers -----------------------------------------------------------------------------


def crawl_scrapy(site: Site, concurrency: int, work: Path) -> Crawl:
    site.reset()
    feed = work / f"items-{uuid.uuid4().hex[:6]}.jsonl"
    command = [sys.executable, str(HERE / "scrapy_peer.py"), "--seeds", *site.seeds, "--out", str(feed),
               "--concurrency", str(concurrency)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    log = site.log()
    items = sum(1 for _ in feed.open()) if feed.exists() else 0
    feed.unlink(missing_ok=True)
    print("   scrapy site duration p50/p90 ms", log.duration_ms_p50_p90, file=sys.stderr)
    return Crawl(
        "scrapy",
        log.pages,
        log.last_page - log.first,
        usage.ru_utime + usage.ru_stime,
        peak_rss_mib=usage.ru_maxrss / 1024,
        records=items,
        extra={"timeline": log.timeline()},
    )


@dataclass(frozen=True)
class Layout:
    """``dualplane run all`` with its defaults (the default: one extractor process per core), or how
    many processes of each service (``dualplane run SERVICE --processes N``) and frontier shards."""

    shards: int = 1
    fetchers: int = 1
    extractors: int = 1
    all_in_one: bool = False

    @classmethod
    def parse(cls, text: str) -> Layout:
        if text == "all":
            return cls(all_in_one=True)
        return cls(*(int(n) for n in text.split(",")))

    def label(self) -> str:
        if self.all_in_one:
            return "dualplane run all (defaults: an extractor per core)"
        return f"{self.shards} shard(s), {self.fetchers} fetcher(s), {self.extractors} extractor(s)"

    def commands(self) -> list[tuple[str, list[str]]]:
        """``(name, command)`` of each process to start."""
        base = [sys.executable, "-m", "dualplane", "run"]
        if self.all_in_one:
            return [("all", [*base, "all", "--log-level", "warning"])]
        found = []
        for name, processes in zip(SERVICES, (self.shards, self.fetchers, self.extractors, 1), strict=True):
            # Always explicit: without --processes, `run extractor` starts one process per core.
            found.append((name, [*base, name, "--log-level", "warning", "--processes", str(processes)]))
        return found


def crawl_dualplane(
    site: Site,
    concurrency: int,
    layout: Layout,
    work: Path,
    profile: Path | None = None,
    *,
    gil: bool = False,
    peer_pages: Path | None = None,
) -> Crawl:
    settings = _settings(work, concurrency, layout)
    env = {**os.environ, **settings.to_env()}
    names = [name for name, _ in layout.commands()]
    metrics_port = extractor_cpu.metrics_ports()
    # Only the processes that extract serve metrics: `run SERVICE --processes N` children of every
    # service would otherwise take the same ports.
    with_metrics = {**env, "DUALPLANE_METRICS_PORT": str(metrics_port)}
    services = [
        subprocess.Popen(command, env=with_metrics if name in {"all", "extractor"} else env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name, command in layout.commands()
    ]  # fmt: skip
    brokers = _broker_pids(settings)
    try:
        time.sleep(8)  # imports, topic and queue declarations, throttle view: before the clock starts
        site.reset()
        spies = _profile(dict(zip(names, services, strict=True)), profile, gil) if profile is not None else []
        cpu_before = cpu_s([p.pid for p in services])
        each_broker_before = {name: cpu_s([pid]) for name, pid in brokers.items()}
        each_before = [cpu_s([p.pid]) for p in services]
        job = f"bench-{uuid.uuid4().hex[:6]}"
        _submit(settings, job, site.seeds)
        outages = _wait_finished(settings, job)
        cpu = cpu_s([p.pid for p in services]) - cpu_before
        each = [cpu_s([p.pid]) - before for p, before in zip(services, each_before, strict=True)]
        # A broker restarted meanwhile (someone else's test) has a new process: its CPU is unknown.
        now = _broker_pids(settings)
        restarted = {name for name, pid in brokers.items() if now.get(name) != pid}
        outages += len(restarted)
        each_broker = {name: 0.0 if name in restarted else cpu_s([pid]) - each_broker_before[name]
                       for name, pid in brokers.items()}  # fmt: skip
        broker_cpu = sum(each_broker.values())
        rss = peak_rss_mib([p.pid for p in services])
        service_cpu = extractor_cpu.in_service(metrics_port)
        for spy in spies:  # py-spy writes its samples when interrupted
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
    finally:
        for process in services:
            process.send_signal(signal.SIGTERM)
        for process in services:
            process.wait(90)
    log = site.log()
    if peer_pages is not None:  # trafilatura alone on the pages this crawl fetched, before the next reset
        peer = extractor_cpu.trafilatura_alone(
            extractor_cpu.served_pages(site.urls[0], site.description, peer_pages)
        )
        service_cpu = {
            **service_cpu,
            "trafilatura_alone": peer,
            "over_trafilatura": round(service_cpu["cpu_ms_per_page"] / max(peer["cpu_ms_per_page"], 1e-9), 3),
        }
    record_times = [m.timestamp()[1] / 1000 for m in read_to_end(settings.kafka, settings.topics.records)]
    raw = sum(1 for _ in read_to_end(settings.kafka, settings.topics.pages_raw))
    drop_namespace(settings)
    _drop_archives(settings)
    end = max(log.last_page, max(record_times, default=log.last_page))
    pages = log.pages
    print("   dualplane site duration p50/p90 ms", log.duration_ms_p50_p90, file=sys.stderr)
    return Crawl("dualplane", pages, end - log.first, cpu, broker_cpu, rss, len(record_times),
                 extra={"layout": layout.label(), "raw_pages": raw, "timeline": log.timeline(),
                        "broker_outages": outages, "extract_cpu_in_service": service_cpu,
                        "cpu_ms_per_page": {name: round(1000 * c / max(pages, 1), 1) for name, c in
                                            zip(names, each, strict=True)},
                        "broker_cpu_ms_per_page": {name: round(1000 * c / max(pages, 1), 1)
                                                   for name, c in each_broker.items()}})  # fmt: skip


def _wait_finished(settings: Settings, job: str) -> int:
    """Wait for ``job`` to finish; returns how many times Kafka stopped answering meanwhile. The brokers
    are shared: someone else's test may restart them, and dualplane carries on once they are back,
    but the figures of such a round are not comparable (they are flagged). One reader for the crawl
    (JobClient.follow keeps it): a new Kafka consumer reading the topic from its start every 0.5 s
    was load on the broker and the cores that Scrapy's run does not carry."""
    outages, down = 0, False

    def look(seen: Look) -> None:
        nonlocal outages, down
        failed = seen[1].why.startswith(BROKERS_UNREACHABLE)
        if failed and not down:
            outages += 1
            print(f"   Kafka did not answer ({seen[1].why}); waiting for it", file=sys.stderr)
        down = failed

    _, verdict = JobClient(settings).wait(job, timeout_s=WAIT_S, quiet_s=2, on_look=look)
    if not verdict.finished:
        raise SystemExit(f"job {job} did not finish within {WAIT_S:g} s: {verdict.why}")
    return outages


def _profile(
    services: dict[str, subprocess.Popen[bytes]], out: Path, gil: bool = False
) -> list[subprocess.Popen[bytes]]:
    """Sample every process of each service (and its children) with py-spy at 50 Hz; with ``gil``
    only threads holding the GIL (Python's CPU, without time blocked in C calls and syscalls)."""
    spy = str(Path(sys.executable).parent / "py-spy")
    spies = []
    for name, process in services.items():
        command = [spy, "record", "--pid", str(process.pid), "--subprocesses", "--rate", "50",
                   "--format", "raw", "--output", str(out / f"{name}.txt")]  # fmt: skip
        command += ["--gil"] if gil else []
        spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return spies


def _settings(work: Path, concurrency: int, layout: Layout) -> Settings:
    """The run's settings: a private namespace (and S3 archive prefix), and what the comparison
    demands of every crawler: ``concurrency`` requests in flight in all and on one host (Scrapy's
    per-host slot is 127.0.0.1, shared by every port), no politeness delay, and loopback allowed
    (the SSRF guard refuses it by default). ``run all`` keeps every other default (the issue's
    condition); the split layouts keep the tuning the earlier figures were measured with."""
    namespace = f"vs-{uuid.uuid4().hex[:8]}"
    base = private_namespace(Settings.from_env(), namespace, work / uuid.uuid4().hex[:6])
    fetch = base.fetch.model_copy(update={"allow_hosts": "127.0.0.1"})
    frontier = base.frontier
    if not layout.all_in_one:
        fetch = fetch.model_copy(update={"delay_jitter": 0, "permit_wait_s": 0.2})
        frontier = frontier.model_copy(update={"outstanding_per_slot": 64})
    return base.model_copy(
        update={
            "queues": base.queues.model_copy(update={"frontier_shards": layout.shards}),
            "limits": base.limits.model_copy(
                update={
                    "domain_concurrency": concurrency,
                    "domain_delay_ms": 0,
                    "fetch_concurrency": max(1, concurrency // layout.fetchers),
                }
            ),
            "fetch": fetch,
            "frontier": frontier,
            "throttle": base.throttle.model_copy(update={"snapshot_path": str(work / "throttle.json")}),
            "sink": base.sink.model_copy(update={"prefix": f"bench/{namespace}"}),
        }
    )


def _drop_archives(settings: Settings) -> None:
    """Delete what the S3 sink archived this run (``run all`` runs it): local S3 keeps objects in memory."""
    client = s3.client(settings.s3)
    bucket = settings.sink.bucket or settings.s3.bucket
    for listing in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=settings.sink.prefix
    ):
        keys = [{"Key": item["Key"]} for item in listing.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys})


def _broker_pids(settings: Settings) -> dict[str, int]:
    stack = LocalStack(settings)
    return {status.name: status.pid for status in stack.status() if status.pid}


def _submit(settings: Settings, job: str, seeds: list[str]) -> None:
    JobClient(settings).crawl(seeds, job_id=job)


# -- report -----------------------------------------------------------------------------------


def median_crawl(crawls: list[Crawl]) -> dict[str, float]:
    timelines = [c.extra["timeline"] for c in crawls]
    return {
        "pages": statistics.median(c.pages for c in crawls),
        "pages_per_s": statistics.median(c.pages_per_s for c in crawls),
        "cpu_ms_per_page": statistics.median(c.cpu_ms_per_page for c in crawls),
        "broker_cpu_ms_per_page": statistics.median(c.broker_cpu_ms_per_page for c in crawls),
        "peak_rss_mib": statistics.median(c.peak_rss_mib for c in crawls),
        "records": statistics.median(c.records for c in crawls),
        "requests": statistics.median(t["requests"] for t in timelines),
        "first_10s": statistics.median(t["first_10s"] for t in timelines),
        "longest_gap_s": statistics.median(t["longest_gap_s"] for t in timelines),
        "peak_per_s": statistics.median(t["peak_per_s"] for t in timelines),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", default="real", help="real, sample, or both as real,sample (one row each)")
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRROR_ROOT, help="real sites' snapshots")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="real sites, unpacked")
    parser.add_argument(
        "--real-sites", default="all", help="some of the real sites (quick runs), comma-separated"
    )
    parser.add_argument("--hosts", type=int, default=20, help="sample site: hosts")
    parser.add_argument("--pages-per-host", type=int, default=250, help="sample site: pages a host")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--layout", default="all", help="all (dualplane run all, its defaults) or shards,fetchers,extractors"
    )
    parser.add_argument(
        "--scaling", action="store_true", help="also: 1/2/4 shards, 1/2 fetchers and extractors"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", type=Path, help="write py-spy samples of every service here")
    parser.add_argument("--gil", action="store_true", help="profile only threads holding the GIL")
    parser.add_argument("--no-scrapy", action="store_true", help="dualplane alone (profiling runs)")
    parser.add_argument(
        "--peer-cpu",
        action="store_true",
        help="real sites: also run trafilatura alone on each crawl's pages (its CPU ms/page beside the "
        "extractor service's own, dualplane_extract_cpu_seconds)",
    )
    args = parser.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    LocalStack(Settings.from_env()).up()
    layout = Layout.parse(args.layout)
    report: dict[str, Any] = {
        "concurrency": args.concurrency,
        "layout": layout.label(),
        "rounds": args.rounds,
        "sites": {},
    }
    with tempfile.TemporaryDirectory(prefix="dualplane-vs-") as tmp:
        for name in args.site.split(","):
            site = _open_site(name, args)
            try:
                report["sites"][name] = run_site(site, args, layout, Path(tmp))
            finally:
                site.close()
    _print(report, args)


def _open_site(name: str, args: argparse.Namespace) -> Site:
    if name == "real":
        return Site.real(args.mirror_root, args.cache_dir, args.real_sites)
    if name == "sample":
        return Site.sample(args.hosts, args.pages_per_host)
    raise SystemExit(f"--site {name!r}: choose real, sample, or real,sample")


def run_site(site: Site, args: argparse.Namespace, layout: Layout, work: Path) -> dict[str, Any]:
    """``--rounds`` rounds on ``site``, dualplane then Scrapy in each; medians and every round."""
    _say(args, f"{site.label()}: {len(site.urls)} host(s)")
    report: dict[str, Any] = {"label": site.label(), "served": site.description.get("sites")}
    ours, theirs = [], []
    for _ in range(args.rounds):
        peer_pages = args.cache_dir if args.peer_cpu and site.name == "real" else None
        ours.append(crawl_dualplane(site, args.concurrency, layout, work, args.profile, gil=args.gil,
                                    peer_pages=peer_pages))  # fmt: skip
        line = f"  round: dualplane {ours[-1].pages} pages, {ours[-1].pages_per_s:.1f} pages/s"
        if not args.no_scrapy:
            theirs.append(crawl_scrapy(site, args.concurrency, work))
            line += f"; scrapy {theirs[-1].pages} pages, {theirs[-1].pages_per_s:.1f} pages/s"
        extra = ours[-1].extra
        _say(
            args,
            f"{line}; dualplane CPU ms/page {extra['cpu_ms_per_page']}, "
            f"brokers {extra['broker_cpu_ms_per_page']}; extraction in the service "
            f"{extra['extract_cpu_in_service']}",
        )
        if extra["broker_outages"]:
            _say(args, "  (Kafka was restarted during this round by someone else: not comparable)")
    report["dualplane"] = median_crawl(ours)
    report["rounds_with_broker_outages"] = sum(1 for crawl in ours if crawl.extra["broker_outages"])
    report["rounds_detail"] = {"dualplane": [asdict(c) for c in ours], "scrapy": [asdict(c) for c in theirs]}
    if theirs:
        report["scrapy"] = median_crawl(theirs)
        report["ratio"] = statistics.median(
            o.pages_per_s / t.pages_per_s for o, t in zip(ours, theirs, strict=True)
        )
    if args.scaling:
        report["scaling"] = _scaling(site, args, work)
    return report


def _scaling(site: Site, args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    layouts = [
        Layout(all_in_one=True),
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
    """Progress on stderr, also with ``--json`` (which owns stdout): a round takes many minutes, and a
    run stopped before its end should still have said what each finished round measured."""
    del args
    print(line, file=sys.stderr, flush=True)


def _print(report: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return
    print(
        f"{report['layout']} against Scrapy + trafilatura, concurrency {args.concurrency}, no delay, "
        f"median of {args.rounds} round(s)"
    )
    for name, site in report["sites"].items():
        print(f"\n{site['label']}" + (" (headline)" if name == "real" else ""))
        for served in site.get("served") or []:
            print(
                f"  {served['site']['name']:16}{served['pages']:6} pages {served['bytes'] / 1e6:7.1f} MB, "
                f"median {served['median_page_bytes'] / 1024:5.1f} KiB  ({served['site']['kind']})"
            )
        print(
            f"{'':14}{'pages':>7}{'pages/s':>9}{'CPU ms/page':>13}{'brokers ms/page':>17}{'peak RSS MiB':>14}"
            f"{'records':>9}{'requests':>10}{'first 10 s':>12}{'longest gap s':>15}"
        )
        for crawler in ("dualplane", "scrapy"):
            if crawler in site:
                r = site[crawler]
                print(
                    f"{crawler:14}{r['pages']:7.0f}{r['pages_per_s']:9.1f}{r['cpu_ms_per_page']:13.1f}"
                    f"{r['broker_cpu_ms_per_page']:17.1f}{r['peak_rss_mib']:14.0f}{r['records']:9.0f}"
                    f"{r['requests']:10.0f}{r['first_10s']:12.0f}{r['longest_gap_s']:15.2f}"
                )
        if site["rounds_with_broker_outages"]:
            print(f"{site['rounds_with_broker_outages']} round(s) saw Kafka restarted by someone else")
        if "ratio" in site:
            print(f"ratio dualplane / scrapy (pages/s): {site['ratio']:.2f}x  (goal >= 1.0, beyond: 1.5)")
        for row in site.get("scaling", []):
            rate, cpu = row["pages_per_s"], row["cpu_ms_per_page"]
            print(f"  {row['layout']:48}{rate:8.1f} pages/s {cpu:8.1f} ms CPU/page")


if __name__ == "__main__":
    main()
