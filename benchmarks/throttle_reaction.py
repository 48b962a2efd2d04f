"""Throttle reaction time: from the fetch event that tips a domain over the threshold to the halved P_d.

What runs: the real processor (``dualplane run throttle``, a Faust worker) on a private namespace of
the shared stack, with ``--window-s`` windows hopping by ``--step-s``, and in this process a
:class:`~data_plane.throttle.view.ThrottleView`, the object every fetcher and the frontier hold: a
fetcher starts no request beyond the view's P_d from the moment the view has the command, so "the
view holds the halved P_d" is "fetchers run at the halved P_d".

Each round gives ``--domains`` fresh domains, staggered: per domain 30 ``ok`` fetch events at once,
then one ``rate_limited`` event every 100 ms. With the 5% threshold the second blocked event is the
*crossing* event (2 of 32 > 5%, and 32 >= the minimum of 20 samples). Two figures per domain:

- **from the crossing event** (its ``fetched_at``) to the view applying the halving command: the
  processing and delivery latency, which the goal "under 2 s beyond the window step" bounds;
- **from the first event of the window step** in which the ratio crossed (the start of the step
  slice holding the crossing event, as the issue counts it): at most one step more.

Medians and p99 over all domains of all rounds. Needs the stack up (``dualplane stack up``).

    .venv/bin/python benchmarks/throttle_reaction.py --domains 40 --rounds 3 [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.core.limits import Limits
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle import ThrottleView
from dualplane.namespaces import drop_namespace, private_namespace

# Test harnesses live in the checkout's tests/support, not in the installed package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.fetch_events import synthetic_fetch_event

ROOT = Path(__file__).parents[1]
CEILING = 8
OK_EVENTS = 30
BLOCKED_INTERVAL_S = 0.1
CROSSING_BLOCKED = 2  # 2 of 32 blocked > 5%
STAGGER_S = 0.25
GOAL_S = 2.0


@dataclass
class Halvings:
    """When the view first saw each domain below the ceiling (wall-clock seconds)."""

    at: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_change(self, domain: str, limits: Limits) -> None:
        if limits.concurrency < CEILING:
            with self.lock:
                self.at.setdefault(domain, time.time())

    def seen(self, domain: str) -> bool:
        with self.lock:
            return domain in self.at


class Driver:
    """Produces each domain's events on schedule until the view reports its halving."""

    def __init__(self, settings: Settings, halvings: Halvings) -> None:
        self.producer = clients.producer(settings.kafka, **{"linger.ms": 0})
        self.topic = settings.topics.fetch_events
        self.halvings = halvings

    def send(self, domain: str, outcome: str) -> float:
        now = time.time()
        retry_after_s = 1.0 if outcome == "rate_limited" else None
        value = synthetic_fetch_event(
            domain, outcome, fetched_at=datetime.fromtimestamp(now, UTC), retry_after_s=retry_after_s
        )
        self.producer.produce(self.topic, value, key=domain.encode())
        self.producer.poll(0)
        return now

    def run_domain(self, domain: str, timeout_s: float = 30) -> float | None:
        """Send the domain's events; the crossing event's time, or None if no halving came."""
        for _ in range(OK_EVENTS):
            self.send(domain, "ok")
        crossing = None
        deadline = time.monotonic() + timeout_s
        blocked = 0
        while not self.halvings.seen(domain) and time.monotonic() < deadline:
            sent = self.send(domain, "rate_limited")
            blocked += 1
            if blocked == CROSSING_BLOCKED:
                crossing = sent
            time.sleep(BLOCKED_INTERVAL_S)
        return crossing if self.halvings.seen(domain) else None


def start_processor(settings: Settings, work: Path, window_s: int, step_s: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **settings.to_env(),
        "DUALPLANE_STACK_DATA_DIR": str(work / "stack"),
        "DUALPLANE_THROTTLE_WINDOW_SIZE_S": str(window_s),
        "DUALPLANE_THROTTLE_WINDOW_STEP_S": str(step_s),
        "DUALPLANE_THROTTLE_THRESHOLD": "0.05",
        "DUALPLANE_THROTTLE_MIN_SAMPLES": "20",
        "DUALPLANE_THROTTLE_CEILING": str(CEILING),
        "DUALPLANE_THROTTLE_PAUSE_RATIO": "0.9",  # a halving, not a pause, is what is timed
        "DUALPLANE_THROTTLE_OFFSET_RESET": "earliest",
        "DUALPLANE_THROTTLE_SNAPSHOT_PATH": "",
    }
    log = (work / "throttle.log").open("wb")
    command = [sys.executable, "-m", "dualplane", "run", "throttle", "--log-level", "warning"]
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def run_round(driver: Driver, round_index: int, domains: int, step_s: int) -> list[tuple[float, float]]:
    """(from crossing, from the step's start) in seconds for each domain of one round."""
    names = [f"r{round_index}-d{i}.bench.example" for i in range(domains)]
    crossings: dict[str, float | None] = {}
    threads = []
    for name in names:
        thread = threading.Thread(target=lambda n=name: crossings.__setitem__(n, driver.run_domain(n)))
        thread.start()
        threads.append(thread)
        time.sleep(STAGGER_S)
    for thread in threads:
        thread.join()
    figures = []
    for name in names:
        crossing = crossings.get(name)
        if crossing is None:
            raise SystemExit(f"no halving for {name} within 30 s; see the processor log")
        applied = driver.halvings.at[name]
        step_start = math.floor(crossing / step_s) * step_s
        figures.append((applied - crossing, applied - step_start))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domains", type=int, default=40, help="domains crossing the threshold per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window-s", type=int, default=10)
    parser.add_argument("--step-s", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        settings = private_namespace(Settings.from_env(), f"bench-{uuid.uuid4().hex[:8]}", work)
        prepare_data_plane(settings)
        halvings = Halvings()
        processor = start_processor(settings, work, args.window_s, args.step_s)
        view = ThrottleView(settings, on_change=halvings.on_change).start()
        try:
            driver = Driver(settings, halvings)
            if driver.run_domain("warmup.bench.example", timeout_s=120) is None:  # the worker is consuming
                raise SystemExit(
                    f"the processor never reacted:\n{(work / 'throttle.log').read_text()[-3000:]}"
                )
            figures = [f for r in range(args.rounds) for f in run_round(driver, r, args.domains, args.step_s)]
        finally:
            view.close()
            processor.terminate()
            processor.wait(30)
            drop_namespace(settings)
    print_report(summarize(figures, args.window_s, args.step_s), as_json=args.json)


def summarize(figures: list[tuple[float, float]], window_s: int, step_s: int) -> dict[str, object]:
    from_crossing = [f[0] for f in figures]
    from_step = [f[1] for f in figures]
    return {
        "domains": len(figures),
        "window_s": window_s,
        "step_s": step_s,
        "from_crossing_p50_s": round(statistics.median(from_crossing), 3),
        "from_crossing_p99_s": round(percentile(from_crossing, 0.99), 3),
        "from_crossing_max_s": round(max(from_crossing), 3),
        "from_step_start_p50_s": round(statistics.median(from_step), 3),
        "from_step_start_p99_s": round(percentile(from_step, 0.99), 3),
        "goal": f"p99 from the step's start minus the step < {GOAL_S} s",
        "goal_met": percentile(from_step, 0.99) - step_s < GOAL_S,
    }


def print_report(report: dict[str, object], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    r = report
    print(f"throttle reaction over {r['domains']} domains ({r['window_s']} s windows, {r['step_s']} s step)")
    print(f"  from the crossing event: p50 {r['from_crossing_p50_s']} s, p99 {r['from_crossing_p99_s']} s, "
          f"max {r['from_crossing_max_s']} s")  # fmt: skip
    print(f"  from the step's start:   p50 {r['from_step_start_p50_s']} s, "
          f"p99 {r['from_step_start_p99_s']} s")  # fmt: skip
    print(f"  goal, {r['goal']}: {'met' if r['goal_met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
