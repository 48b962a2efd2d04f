"""How many discovered URLs a frontier shard admits per second: batched, against one URL a message.

A shard queue is filled first (so the frontier's own speed is measured, not the publisher's):
``--pages`` discovery messages of ``--links`` URLs each, as the fetcher sends them (one batch per
page), over ``--sites`` sites with about a third of the links new (the rest repeat earlier pages'
links, as on real sites). Then ``dualplane run frontier`` starts as its own process and the clock
runs until every URL is counted (discovered, duplicate or out of scope) in the job's progress. The
peer, in the same run: the same URLs sent one per message (``DiscoveredUrl``), as before batching.
Admission here is the whole road (canonicalize, scope, dedup, robots off, counters, the changelog
in Kafka, tasks published), with P_d and D_max high enough that no URL waits in the backlog.

    .venv/bin/python benchmarks/frontier_admission.py --pages 1500 --links 34 --rounds 3 [--json]

``--shards N`` runs the batched side over N frontier shards (``run frontier --processes N``, one
process a shard), so the figure is what one machine's cores admit together; the peer stays one
shard, as before batching there was only one.

Needs the stack up (``dualplane stack up``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from dualplane.brokers import amqp
from dualplane.brokers.amqp.discovery import discovery_batches
from dualplane.brokers.amqp.messages import DiscoveredUrl, JobSpec, new_id
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier import ProgressReader
from dualplane.control_plane.frontier.submit import submit_job
from dualplane.core.settings import LimitSettings, Settings
from dualplane.namespaces import drop_namespace, private_namespace

COUNTED = ("discovered", "duplicates", "out_of_scope", "invalid", "disallowed", "over_limit")


def settings_for(work: Path, shards: int) -> Settings:
    base = Settings.from_env()
    settings = private_namespace(base, f"bench-{uuid.uuid4().hex[:8]}", work)
    frontier = settings.frontier.model_copy(
        update={"max_outstanding": 10_000_000, "outstanding_per_slot": 100_000, "snapshot_interval_s": 0.2}
    )
    queues = settings.queues.model_copy(update={"frontier_shards": shards})
    return settings.model_copy(
        update={"frontier": frontier, "queues": queues, "limits": LimitSettings(domain_concurrency=16)}
    )


def pages(count: int, links: int, sites: int, seed: int = 7) -> Iterator[list[str]]:
    """Each page's links: a third new, the rest links seen on earlier pages (menus, listings)."""
    rng = random.Random(seed)
    known: list[str] = []
    for page in range(count):
        urls = []
        for link in range(links):
            if link % 3 == 0 or not known:
                url = f"http://site-{rng.randrange(sites)}.example/p/{page}/{link}?utm_source=x&b=2&a=1"
                known.append(url)
            else:
                url = known[rng.randrange(len(known))]
            urls.append(url)
        yield urls


def fill(settings: Settings, job_id: str, batched: bool, args: argparse.Namespace) -> int:
    """Publish the job and every page's links to the shard queue; how many URLs were sent."""
    connection = amqp.connect(settings.amqp)
    channel = confirmed_channel(connection)
    topology = Topology.declared(settings.queues, channel)
    submit_job(channel, topology, JobSpec(job_id=job_id, obey_robots=False), [])
    sent = 0
    for urls in pages(args.pages, args.links, args.sites):
        sent += len(urls)
        if batched:
            for key, batch in discovery_batches(topology, job_id, urls, depth=1):
                publish(channel, topology.discovery_exchange, key, batch, message_id=new_id())
        else:
            for url in urls:
                found = DiscoveredUrl(job_id=job_id, url=url, depth=1)
                publish(channel, topology.discovery_exchange, "0", found, message_id=new_id())
    connection.close()
    return sent


def counted(reader: ProgressReader, job_id: str) -> int:
    progress = reader.job(job_id) or {}
    return sum(int(progress.get(name, 0)) for name in COUNTED)


def one_round(batched: bool, args: argparse.Namespace, work: Path) -> float:
    """One fill, then one frontier process timed from its first counted URL to its last."""
    settings = settings_for(work / uuid.uuid4().hex[:6], args.shards if batched else 1)
    job_id = f"admit-{uuid.uuid4().hex[:6]}"
    try:
        total = fill(settings, job_id, batched, args)
        env = {**os.environ, **settings.to_env()}
        command = [sys.executable, "-m", "dualplane", "run", "frontier", "--log-level", "warning",
                   "--processes", str(settings.queues.frontier_shards)]  # fmt: skip
        frontier = subprocess.Popen(command, env=env)
        # One reader for the round: a new consumer every poll took CPU from the frontier it measures.
        reader = ProgressReader(settings)
        try:
            while counted(reader, job_id) == 0:  # started, read the changelog, took the shard
                _alive(frontier)
                time.sleep(0.05)
            started = time.monotonic()
            # Profiled from here: the process's start (imports) is not admission.
            spy = _profile(frontier.pid, args.profile, batched) if args.profile else None
            while (done := counted(reader, job_id)) < total:
                _alive(frontier)
                time.sleep(0.1)
            elapsed = time.monotonic() - started
            if spy:  # py-spy writes its samples when interrupted
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
        finally:
            reader.close()
            frontier.send_signal(signal.SIGTERM)
            frontier.wait(60)
        return done / elapsed
    finally:
        drop_namespace(settings)


def _alive(frontier: subprocess.Popen[bytes]) -> None:
    if frontier.poll() is not None:
        raise SystemExit(f"the frontier exited with status {frontier.returncode} before admitting every URL")


def _profile(pid: int, out: Path, batched: bool) -> subprocess.Popen[bytes]:
    """Sample the frontier with py-spy at 100 Hz into ``out`` (collapsed stacks, one file a mode)."""
    out.mkdir(parents=True, exist_ok=True)
    name = "batched" if batched else "one_per_message"
    spy = str(Path(sys.executable).parent / "py-spy")
    command = [spy, "record", "--pid", str(pid), "--subprocesses", "--rate", "100", "--format", "raw",
               "--output", str(out / f"frontier-{name}.txt")]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=1500)
    parser.add_argument("--links", type=int, default=34)
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--shards", type=int, default=1, help="frontier shards for the batched run, one process each"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", type=Path, help="write py-spy samples of the frontier here")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"batched": [], "one_per_message": []}
    with tempfile.TemporaryDirectory(prefix="dualplane-admission-") as work:
        for _ in range(args.rounds):  # interleaved, so both see the same machine
            rates["batched"].append(one_round(True, args, Path(work)))
            rates["one_per_message"].append(one_round(False, args, Path(work)))
    report = {name: statistics.median(values) for name, values in rates.items()}
    report["ratio"] = report["batched"] / report["one_per_message"]
    if args.json:
        print(json.dumps({"urls_per_s": report, "rounds": rates}, indent=2))
        return
    urls = args.pages * args.links
    print(
        f"frontier admission, {urls} URLs ({args.links} a page, a third new), median of {args.rounds} rounds"
    )
    shards = f", {args.shards} shards" if args.shards > 1 else ""
    print(f"  batched (one message a page{shards}):  {report['batched']:9.0f} URLs/s")
    print(f"  one URL a message (before):    {report['one_per_message']:9.0f} URLs/s")
    print(f"  ratio: {report['ratio']:.1f}x   (goal: batched >= 10,000 URLs/s)")


if __name__ == "__main__":
    main()
