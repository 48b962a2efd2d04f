"""Replay throughput against the offline ceiling, and extraction time by page size.

1. Fills a private ``pages.raw`` with the sample site's pages (rendered in-process, nothing fetched).
2. Ceiling: ``extract_record`` over the same pages in one process, no Kafka (pages/s).
3. Replay of the whole topic into a private records topic with 1 process and with one per core
   (records/s), as a ratio of the ceiling (times the number of processes for the per-core run).
   In this process, as a program embedding replay sees it: 1 process runs in the caller; the
   per-core run forks its workers from a fork server whose start (imports, warm-up) falls in the
   warm-up round, reported apart ("first round").
4. The same replays as one-shot ``dualplane replay`` commands (a fresh interpreter each time,
   imports included): what an operator sees.
5. Extraction ms/page by page size, with larger pages made by repeating article bodies.

Each round measures everything back to back and ratios are taken within a round (this machine's
load drifts between minutes); medians of ``--rounds`` after one warm-up round. Needs the stack up.

    .venv/bin/python benchmarks/replay_throughput.py --pages 60 --rounds 3 [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.core.web.urls import canonicalize
from dualplane.data_plane.extract import extract_record
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extractor.replay import plan, replay
from dualplane.namespaces import drop_namespace, private_namespace
from dualplane.sample_site import SiteModel, SiteSpec, reachable_urls

SIZES_KIB = (16, 64, 256, 1024, 4096)
ROOT = Path(__file__).resolve().parents[1]


def sample_pages(pages_per_host: int) -> list[dict[str, Any]]:
    spec = SiteSpec(seed=41, hosts=3, pages_per_host=pages_per_host, latency_ms=0, base_port=28_500)
    model = SiteModel(spec)
    pages = []
    for i, url in enumerate(sorted(reachable_urls(spec))):
        parts = urlsplit(url)
        host = spec.origins().index(f"{parts.scheme}://{parts.netloc}")
        body = model.resolve(host, parts.path, parts.query).body
        fetched_at = datetime.fromtimestamp(1_793_534_400 + i, UTC)
        pages.append(raw_page(body, url, fetched_at=fetched_at, job_id="bench", charset="utf-8"))
    return pages


def offline_pages_per_s(pages: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    for page in pages:
        schemas.encode("page_record", extract_record(page, schema_version=2), 2)
    return len(pages) / (time.perf_counter() - started)


def replay_records_per_s(settings: Settings, processes: int) -> float:
    topic = f"{settings.topics.records}.{uuid.uuid4().hex[:6]}"
    result = replay(settings, plan(settings), schema_version=2, to_topic=topic, processes=processes)
    return result.records / result.duration_s


def cli_records_per_s(settings: Settings, processes: int) -> float:
    """``dualplane replay`` in a fresh process: records over the wall time of the whole command."""
    topic = f"{settings.topics.records}.{uuid.uuid4().hex[:6]}"
    command = [sys.executable, "-m", "dualplane", "replay", "--schema-version", "2", "--to-topic", topic]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--processes", str(processes), "--json"],
        env={**os.environ, **settings.to_env()}, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    return int(json.loads(done.stdout)["result"]["records"]) / elapsed


def measure_round(settings: Settings, pages: list[dict[str, Any]], cores: int) -> dict[str, float]:
    """One round of every measurement, back to back: ratios within a round share the machine's load."""
    offline = offline_pages_per_s(pages)
    figures = {
        "offline": offline,
        "replay_1": replay_records_per_s(settings, 1),
        "replay_n": replay_records_per_s(settings, cores),
        "cli_1": cli_records_per_s(settings, 1),
        "cli_n": cli_records_per_s(settings, cores),
    }
    for name in ("replay_1", "cli_1"):
        figures[f"{name}_ratio"] = figures[name] / offline
    for name in ("replay_n", "cli_n"):
        figures[f"{name}_ratio"] = figures[name] / (offline * cores)
    return figures


def ms_by_size(pages: list[dict[str, Any]]) -> dict[str, float]:
    """Median extraction time of the largest sample page grown to each size (body content repeated)."""
    base = max(pages, key=lambda page: len(page["body"]))
    head, closing, tail = bytes(base["body"]).partition(b"</body>")
    inner = head[head.find(b"<body") :] or head
    figures = {}
    for size_kib in SIZES_KIB:
        repeats = max(0, size_kib * 1024 // len(inner) - 1)
        page = {**base, "body": head + inner * repeats + closing + tail}
        times = []
        for _ in range(3):
            started = time.perf_counter()
            extract_record(page, schema_version=2)
            times.append((time.perf_counter() - started) * 1000)
        figures[f"{size_kib} KiB"] = round(statistics.median(times), 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=100, help="pages per host of the sample site (3 hosts)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    pages = sample_pages(args.pages)
    with tempfile.TemporaryDirectory() as work:
        settings = private_namespace(Settings.from_env(), f"bench-{uuid.uuid4().hex[:8]}", Path(work))
        settings = settings.model_copy(
            update={"topics": settings.topics.model_copy(update={"partitions": cores})}
        )
        ensure_data_plane_topics(settings)
        producer = clients.producer(settings.kafka)
        for page in pages:
            producer.produce(
                settings.topics.pages_raw,
                schemas.encode("raw_page", page),
                canonicalize(page["url"]).encode(),
            )
        producer.flush(60)
        rounds = [measure_round(settings, pages, cores) for _ in range(args.rounds + 1)]
        drop_namespace(settings)
    cold, warm = rounds[0], rounds[1:]  # round 0 also starts the fork server and warms the parsers

    def median(key: str) -> float:
        return round(statistics.median(figures[key] for figures in warm), 2 if key.endswith("ratio") else 1)

    report = {
        "pages": len(pages),
        "rounds": args.rounds,
        "offline_pages_per_s": median("offline"),
        "replay_1_process_records_per_s": median("replay_1"),
        "replay_1_process_vs_offline": median("replay_1_ratio"),
        f"replay_{cores}_processes_records_per_s": median("replay_n"),
        f"replay_{cores}_processes_vs_offline_x{cores}": median("replay_n_ratio"),
        f"replay_{cores}_processes_first_round_records_per_s": round(cold["replay_n"], 1),
        "cli_1_process_records_per_s": median("cli_1"),
        "cli_1_process_vs_offline": median("cli_1_ratio"),
        f"cli_{cores}_processes_records_per_s": median("cli_n"),
        f"cli_{cores}_processes_vs_offline_x{cores}": median("cli_n_ratio"),
        "extraction_ms_by_size": ms_by_size(pages),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    ratio = f"x {cores} x ceiling"
    print(f"replay of {len(pages)} pages, medians of {args.rounds} rounds ({cores} cores)")
    print(f"  offline extraction (ceiling):   {report['offline_pages_per_s']:8.1f} pages/s")
    print(f"  replay, 1 process:              {report['replay_1_process_records_per_s']:8.1f} records/s  "
          f"({report['replay_1_process_vs_offline']:.2f} x ceiling)")  # fmt: skip
    print(f"  replay, {cores} processes:            {report[f'replay_{cores}_processes_records_per_s']:8.1f} "
          f"records/s  ({report[f'replay_{cores}_processes_vs_offline_x{cores}']:.2f} {ratio}; first round, "
          f"fork server starting: {cold['replay_n']:.1f})")  # fmt: skip
    print(f"  dualplane replay, 1 process:    {report['cli_1_process_records_per_s']:8.1f} records/s  "
          f"({report['cli_1_process_vs_offline']:.2f} x ceiling)")  # fmt: skip
    print(f"  dualplane replay, {cores} processes:  {report[f'cli_{cores}_processes_records_per_s']:8.1f} "
          f"records/s  ({report[f'cli_{cores}_processes_vs_offline_x{cores}']:.2f} {ratio})")  # fmt: skip
    print(
        "  extraction ms/page by size: "
        + ", ".join(f"{k}: {v} ms" for k, v in report["extraction_ms_by_size"].items())
    )  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
