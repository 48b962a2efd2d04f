"""The cost of 1,000,000 scheduled URLs in one frontier shard: memory, and due URLs made tasks per second.

Against today's frontier at the same size: a shard whose job has admitted 1,000,000 URLs (1,000,000
rows in ``tasks`` and 1,000,000 keys in the seen set), admitting new discovered URLs.

* **monitor**: a shard store (``FrontierState``) holding one monitor and ``--urls`` schedule rows (60-
  to 90-character URLs over 1,000 sites, validators kept), then all made due: the clock runs while
  :meth:`Monitors.take_due` turns ``--measure`` of them into tasks, pass by pass as the frontier does
  (a bounded batch, then the pass's changelog rows built and the store committed).
* **today**: a store with ``--urls`` tasks of one job and a seen set of as many keys; the clock runs
  while :class:`Admission` admits ``--measure`` new URLs in batches of 1,000 (canonicalize, scope,
  dedup, robots off), each task recorded as issued, changelog rows built, store and seen set committed.

Each side runs in its own process (its RSS is its own): the peak RSS, the SQLite files' size, and the
CPU seconds of the timed part (process CPU time, median of ``--rounds``). No brokers: the changelog's
Kafka write is the same for both (one record per changed row) and left out.

    .venv/bin/python benchmarks/monitor_schedule.py --urls 1000000 --measure 20000 --rounds 3 [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dualplane.brokers.amqp.messages import JobSpec, MonitorSpec
from dualplane.control_plane.frontier.admission import Admission, Batch
from dualplane.control_plane.frontier.monitors import Monitors
from dualplane.control_plane.frontier.robots import RobotsCache
from dualplane.control_plane.frontier.schedule import COLUMNS, schedule_id
from dualplane.control_plane.frontier.seen import SeenSet
from dualplane.control_plane.frontier.store import FrontierState
from dualplane.core.web.domains import shard_bucket
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import url_key

SITES = 1000
WORDS = ("alpine", "canvas", "walnut", "merino", "ceramic", "sneakers", "pendant", "speaker", "board")


def url(number: int) -> str:
    """A shop-like URL of 60-90 characters (the same ones for both sides)."""
    rng = random.Random(number)
    words = "-".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
    return f"https://shop-{number % SITES}.example.com/product/{words}-{number}?ref=cat-{rng.randint(1, 99)}"


def _files_mib(directory: Path) -> float:
    return sum(path.stat().st_size for path in directory.glob("*.sqlite*")) / 2**20


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def monitor_side(directory: Path, urls: int, measure: int) -> dict[str, Any]:
    state = FrontierState(directory / "frontier.sqlite")
    monitors = Monitors(state, "progress", 0)
    job = JobSpec(job_id="shop-v1", monitor="shop", obey_robots=False)
    monitors.save(
        MonitorSpec(
            monitor_id="shop", job=job, interval_s=86_400, min_interval_s=3600, max_interval_s=7 * 86_400
        )
    )
    state.save_job(job)
    state.count(job.job_id, seeded=1)
    state.commit()
    now = int(time.time())
    rows = (
        (schedule_id("shop", url(n)), "shop", url(n), now - 10 - n % 1000, 86_400,
         f'"{n:024x}"', "Sat, 28 Nov 2026 11:42:20 GMT", None, None, now - 86_400, 1, 0, 1, 0)
        for n in range(urls)
    )  # fmt: skip
    placeholders = ", ".join("?" for _ in COLUMNS)
    state.db.executemany(f"INSERT INTO schedule ({', '.join(COLUMNS)}) VALUES ({placeholders})", rows)
    state.db.execute("UPDATE monitors SET scheduled = ?", (urls,))
    state.commit()
    state.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size_mib = _files_mib(directory)
    started, issued = _cpu_s(), 0
    while issued < measure:
        issued += monitors.take_due(lambda task: True).issued
        state.changes()  # the pass's changelog rows, as the frontier builds them
        state.commit()
    cpu_s = _cpu_s() - started
    return {"files_mib": size_mib, "cpu_s": cpu_s, "tasks": issued}


def today_side(directory: Path, urls: int, measure: int) -> dict[str, Any]:
    state = FrontierState(directory / "frontier.sqlite")
    seen = SeenSet(
        directory / "seen.sqlite", exact_limit=1_000_000, expected_items=50_000_000, false_positive_rate=0.001
    )
    job = JobSpec(job_id="crawl", obey_robots=False)
    state.save_job(job)
    tasks = ((f"{n:032x}", job.job_id, f"shop-{n % SITES}.example.com", "done") for n in range(urls))
    state.db.executemany("INSERT INTO tasks (task_id, job_id, domain, state) VALUES (?, ?, ?, ?)", tasks)
    state.commit()
    for first in range(0, urls, 50_000):
        keys = {url_key(f"{job.job_id} {url(n)}"): shard_bucket(f"shop-{n % SITES}.example.com")
                for n in range(first, min(first + 50_000, urls))}  # fmt: skip
        seen.add_many(keys)
        seen.flush()
    state.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size_mib = _files_mib(directory)
    robots = RobotsCache("bench", guard=SsrfGuard.from_setting(""), ttl_s=60, fetch_timeout_s=1)
    admission = Admission(
        state, seen, robots, SsrfGuard.from_setting(""), strip_params=frozenset(), max_attempts=5
    )
    started, issued, number = _cpu_s(), 0, urls
    while issued < measure:
        batch = Batch(job.job_id, [url(n) for n in range(number, number + 1000)])
        number += 1000
        admitted = admission.consider(job, batch, {})
        for task in admitted.tasks:
            state.task_issued(task.task_id, task.job_id, task.domain)
        state.changes()
        seen.add_many(admitted.keys)
        seen.flush()
        state.commit()
        issued += len(admitted.tasks)
    cpu_s = _cpu_s() - started
    robots.close()
    return {"files_mib": size_mib, "cpu_s": cpu_s, "tasks": issued}


def _run(side: str, urls: int, measure: int, queue: Any) -> None:
    with tempfile.TemporaryDirectory(prefix=f"bench-{side}-") as work:
        figures = (monitor_side if side == "monitor" else today_side)(Path(work), urls, measure)
        figures["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        queue.put(figures)


def measure_side(side: str, urls: int, measure: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_run, args=(side, urls, measure, queue))
    process.start()
    figures: dict[str, Any] = queue.get()
    process.join()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--measure", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sides", default="monitor,today", help="Which sides to run (comma-separated).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"urls": args.urls, "measured": args.measure}
    for side in args.sides.split(","):
        rounds = [measure_side(side, args.urls, args.measure) for _ in range(args.rounds)]
        cpu_s = statistics.median(r["cpu_s"] for r in rounds)
        result[side] = {
            "files_mib": round(rounds[0]["files_mib"], 1),
            "rss_mib": round(statistics.median(r["rss_mib"] for r in rounds), 1),
            "tasks_per_cpu_s": round(args.measure / cpu_s),
            "cpu_s_rounds": [round(r["cpu_s"], 3) for r in rounds],
        }
    if "monitor" not in result or "today" not in result:
        print(json.dumps(result, indent=2))
        return
    monitor, today = result["monitor"], result["today"]
    result["ratios"] = {
        "files": round(monitor["files_mib"] / today["files_mib"], 2),
        "rss": round(monitor["rss_mib"] / today["rss_mib"], 2),
        "tasks_per_cpu_s": round(monitor["tasks_per_cpu_s"] / today["tasks_per_cpu_s"], 2),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for side, words in (("monitor", "monitor, URLs scheduled"), ("today", "today, URLs seen+tasks")):
        figures = result[side]
        print(f"{words:<26} {args.urls:>9,}  files {figures['files_mib']:7.1f} MiB  peak RSS "
              f"{figures['rss_mib']:6.1f} MiB  {figures['tasks_per_cpu_s']:>7,} tasks/CPU-s  "
              f"CPU s {figures['cpu_s_rounds']}")  # fmt: skip
    print(f"monitor / today: files x{result['ratios']['files']}, RSS x{result['ratios']['rss']}, "
          f"tasks per CPU-s x{result['ratios']['tasks_per_cpu_s']}")  # fmt: skip


if __name__ == "__main__":
    main()
