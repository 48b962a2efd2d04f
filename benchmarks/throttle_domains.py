"""The throttle processor's memory, CPU and state per domain, from 50 to 5,000 domains (issue #33).

A real Faust worker of the processor (``dualplane.data_plane.throttle.worker``, every
``DUALPLANE_THROTTLE_*`` at its shipped default: the 10-minute window in 1-minute steps and the
fast 6 s one in 1 s steps) reads synthetic fetch events (``tests/support/fetch_events.py``) that
this process produces to ``fetch.events`` in a private namespace. Domains come in steps (by
default 50, then up to 500, then up to 5,000); each new domain gets ``--events`` events a second
apart in event time, one in ``--blocking-every`` domains has a third of them blocked (429), so it
is backed off and has a policy state and a command, the others only windows. After each step,
once the worker has counted every event (its snapshot's ``stats.events``), the figures are:

- **RSS** of the worker process (``/proc/PID/status``), and its growth per domain added;
- **CPU** of the worker (user + system) per event in the step;
- **state**: the bytes of the worker's tables as their changelog topics hold them (the last value
  per key: the states table and both bucket tables), per domain; the snapshot's size per domain.

The ratio that matters is flatness: bytes and CPU per domain at 5,000 against 50.

    .venv/bin/python benchmarks/throttle_domains.py [--steps 50 500 5000] [--events 12] [--json]

Needs the stack up (``dualplane stack up``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle.exceptions import ThrottleError
from dualplane.data_plane.throttle.snapshot import read_snapshot
from dualplane.namespaces import drop_namespace, private_namespace

# Test harnesses live in the checkout's tests/support, not in the installed package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.fetch_events import synthetic_fetch_event

ROOT = Path(__file__).resolve().parents[1]


def start_worker(settings: Settings, work_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **settings.to_env(), "DUALPLANE_THROTTLE_OFFSET_RESET": "earliest"}
    log = (work_dir / "worker.log").open("wb")
    command = [
        sys.executable, "-m", "faust", "-A", "dualplane.data_plane.throttle.worker",
        "--datadir", str(work_dir / "faust"), "worker", "--loglevel", "warn", "--without-web",
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def snapshot(settings: Settings) -> dict[str, Any]:
    path = settings.throttle_snapshot_path
    try:
        return read_snapshot(path) if path is not None else {}
    except ThrottleError:
        return {}  # not written yet


def counted_events(settings: Settings) -> int:
    return int(snapshot(settings).get("stats", {}).get("events", 0))


def wait_until(check: Any, what: str, worker: subprocess.Popen[bytes], timeout_s: float = 1800) -> None:
    """Until ``check()``; generous: 60,000 events took 13 min on a machine at a load average of 100."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if worker.poll() is not None:
            raise SystemExit(f"the throttle worker exited with {worker.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.5)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no VmRSS for process {pid}")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce(settings: Settings, first: int, last: int, events: int, blocking_every: int) -> int:
    """Events for domains ``first`` .. ``last - 1``, a second apart in event time, ending now."""
    producer = clients.producer(settings.kafka, **{"linger.ms": 20})
    start = datetime.now(UTC) - timedelta(seconds=events)
    sent = 0
    for index in range(first, last):
        domain = f"d{index:05d}.example"
        blocking = index % blocking_every == 0
        for n in range(events):
            outcome = "rate_limited" if blocking and n % 3 == 2 else "ok"
            value = synthetic_fetch_event(
                domain, outcome, fetched_at=start + timedelta(seconds=n),
                retry_after_s=1.0 if outcome == "rate_limited" else None,
            )  # fmt: skip
            producer.produce(settings.topics.fetch_events, value, key=domain.encode())
            producer.poll(0)
            sent += 1
    producer.flush(60)
    return sent


def table_bytes(settings: Settings, topics: list[str]) -> tuple[int, int]:
    """(bytes, keys) of the last value per key across ``topics`` (what a compacted topic keeps)."""
    consumer = clients.consumer(
        settings.kafka, group_id=f"bench-{uuid.uuid4().hex[:8]}", **{"enable.auto.commit": False}
    )
    latest: dict[tuple[str | None, bytes], int] = {}
    try:
        consumer.subscribe(topics)
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < 5:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            idle_since = time.monotonic()
            key = (message.topic(), message.key() or b"")
            value = message.value()
            if value is None:
                latest.pop(key, None)  # a tombstone: the key is gone
            else:
                latest[key] = len(key[1]) + len(value)
    finally:
        consumer.close()
    return sum(latest.values()), len(latest)


def table_topics(settings: Settings) -> list[str]:
    metadata = clients.admin(settings.kafka).list_topics(timeout=10)
    app_id = settings.throttle_app_id
    return sorted(name for name in metadata.topics if name.startswith(app_id) and name.endswith("-changelog"))


def run(
    settings: Settings, work_dir: Path, steps: list[int], events: int, blocking_every: int
) -> list[dict[str, Any]]:
    prepare_data_plane(settings)
    worker = start_worker(settings, work_dir)
    rows: list[dict[str, Any]] = []
    try:
        wait_until(lambda: bool(snapshot(settings).get("ready")), "the worker to be ready", worker)
        time.sleep(2)
        base_rss, base_cpu = rss_bytes(worker.pid), cpu_s(worker.pid)
        rows.append({"domains": 0, "rss_bytes": base_rss})
        domains, produced, last_rss = 0, 0, base_rss
        for target in steps:
            cpu_before = cpu_s(worker.pid)
            produced += produce(settings, domains, target, events, blocking_every)
            wait_until(
                lambda counted=produced: counted_events(settings) >= counted,
                f"{produced} events counted", worker,
            )  # fmt: skip
            time.sleep(3)  # a snapshot interval and a flush: the tables' writes reach their changelogs
            step_events, added = (target - domains) * events, target - domains
            domains = target
            state_bytes, keys = table_bytes(settings, table_topics(settings))
            shot = snapshot(settings)
            rss = rss_bytes(worker.pid)
            rows.append({
                "domains": domains,
                "events": produced,
                "rss_bytes": rss,
                "rss_per_domain_bytes": round((rss - base_rss) / domains),
                "rss_per_added_domain_bytes": round((rss - last_rss) / added),
                "cpu_per_event_ms": round((cpu_s(worker.pid) - cpu_before) * 1000 / step_events, 3),
                "table_bytes": state_bytes,
                "table_keys": keys,
                "table_bytes_per_domain": round(state_bytes / domains),
                "snapshot_bytes_per_domain": round(len(json.dumps(shot.get("domains", {}))) / domains),
                "backed_off": sum(1 for d in shot.get("domains", {}).values() if d.get("rate_rps")),
            })  # fmt: skip
            last_rss = rss
        rows[0]["cpu_startup_s"] = round(base_cpu, 2)
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[50, 500, 5000], help="domains after each step"
    )
    parser.add_argument("--events", type=int, default=12, help="events per domain, a second apart")
    parser.add_argument("--blocking-every", type=int, default=10, help="one domain in this many is blocked")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work_dir = Path(work)
        base = Settings.from_env()
        settings = private_namespace(base, f"tdom-{uuid.uuid4().hex[:8]}", work_dir / "frontier")
        settings = settings.model_copy(
            update={
                "throttle": settings.throttle.model_copy(
                    update={"snapshot_path": str(work_dir / "snap.json")}
                )
            }
        )
        try:
            rows = run(settings, work_dir, sorted(args.steps), args.events, args.blocking_every)
        finally:
            drop_namespace(settings)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        f"{'domains':>8} {'RSS MiB':>8} {'RSS/domain':>11} {'RSS/added':>10} {'CPU/event':>10} "
        f"{'state/domain':>13} {'snapshot/domain':>16}"
    )
    for row in rows[1:]:
        print(
            f"{row['domains']:>8} {row['rss_bytes'] / 2**20:>8.1f} {row['rss_per_domain_bytes']:>9} B "
            f"{row['rss_per_added_domain_bytes']:>8} B "
            f"{row['cpu_per_event_ms']:>7.3f} ms {row['table_bytes_per_domain']:>11} B "
            f"{row['snapshot_bytes_per_domain']:>14} B"
        )
    first, last = rows[1], rows[-1]
    print(
        f"ratio {last['domains']} / {first['domains']} domains: state per domain "
        f"{last['table_bytes_per_domain'] / max(first['table_bytes_per_domain'], 1):.2f}x, "
        f"CPU per event {last['cpu_per_event_ms'] / max(first['cpu_per_event_ms'], 1e-9):.2f}x"
    )


if __name__ == "__main__":
    main()
