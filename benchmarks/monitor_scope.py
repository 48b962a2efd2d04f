"""A ``--max-depth 1`` monitor of the sample site over three visits: URLs fetched and scheduled per visit.

#34: revisits were tasks at depth 0, so each visit admitted the links of the previous visit's deepest
pages and the schedule grew one level per visit (the probe's shop: 141 URLs, then 3,289, every new
one a 404). Run it from a checkout (its own ``dualplane`` package and services) against a running
stack; it crawls in a namespace of its own (``--name``), dropped afterwards:

    .venv/bin/python benchmarks/monitor_scope.py --name after [--visits 3] [--hosts 1]

It starts a frontier, a fetcher and an extractor (``dualplane run``, one process each), serves the
sample site, creates the monitor, asks for each visit after the previous one finished (``monitor
visit``), and prints per visit the fetch outcomes and the URLs scheduled after it, then the schedule's
change events by kind (``new``, ``gone``; none before change_event v2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter

from dualplane import schemas
from dualplane.brokers.amqp.messages import JobSpec, MonitorSpec, visit_job_id
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.control_plane.frontier import JobClient, MonitorClient
from dualplane.core.settings import Settings
from dualplane.namespaces import drop_namespace, named_namespace
from dualplane.sample_site import SampleSite, SiteSpec

FAST = {"DUALPLANE_FETCH_ALLOW_HOSTS": "127.0.0.1", "DUALPLANE_LIMIT_DOMAIN_DELAY_MS": "0",
        "DUALPLANE_LIMIT_DOMAIN_CONCURRENCY": "8"}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="scope", help="namespace and monitor name")
    parser.add_argument("--visits", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=1)
    args = parser.parse_args()
    settings = named_namespace(Settings.from_env(), args.name)
    env = {**os.environ, **settings.to_env(), **FAST}
    services = [
        subprocess.Popen(
            [sys.executable, "-m", "dualplane", "run", name, "--processes", "1"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name in ("frontier", "fetcher", "extractor")
    ]
    try:
        with SampleSite(SiteSpec(seed=7, hosts=args.hosts, pages_per_host=140, latency_ms=0)) as site:
            time.sleep(15)  # the services declare their queues and join their groups
            visits = _visits(settings, f"scope-{args.name}", site.seeds, args.visits)
        _print(settings, args.name, visits)
    finally:
        for service in services:
            service.terminate()
        for service in services:
            service.wait(30)
        drop_namespace(settings)


def _visits(settings: Settings, monitor: str, seeds: list[str], visits: int) -> list[tuple[str, int]]:
    """Each visit's job id and the URLs scheduled once it finished."""
    job = JobSpec(
        job_id=visit_job_id(monitor, 1), allowed_domains=("127.0.0.1",), max_depth=1, monitor=monitor
    )
    spec = MonitorSpec(
        monitor_id=monitor, job=job, interval_s=3600, min_interval_s=600, max_interval_s=86_400
    )
    client, jobs = MonitorClient(settings), JobClient(settings)
    count = client.create(spec, seeds)
    done = []
    for number in range(1, visits + 1):
        job_id = job.job_id if number == 1 else client.visit(monitor)
        list(jobs.follow(job_id, timeout_s=300, seeds=count if number == 1 else None, quiet_s=2.0))
        time.sleep(5)  # a monitor snapshot published after the visit's last report
        done.append((job_id, int(client.monitor(monitor)["scheduled"])))
    return done


def _print(settings: Settings, name: str, visits: list[tuple[str, int]]) -> None:
    events = [
        schemas.decode(m.value() or b"").record
        for m in read_to_end(settings.kafka, settings.topics.fetch_events)
    ]
    for number, (job_id, scheduled) in enumerate(visits, start=1):
        outcomes = Counter(e["outcome"] for e in events if e["job_id"] == job_id)
        print(
            f"{name} visit {number}: fetched {sum(outcomes.values())} {dict(outcomes)}; "
            f"scheduled after it {scheduled}"
        )
    changes = [
        schemas.decode(m.value() or b"").record for m in read_to_end(settings.kafka, settings.topics.changes)
    ]
    kinds = Counter(str(change.get("kind", "changed")) for change in changes)
    print(f"{name} change events by kind: {dict(kinds)}")


if __name__ == "__main__":
    main()
