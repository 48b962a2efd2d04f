"""Dual-plane isolation: throttle command delivery latency with Kafka idle and with Kafka saturated.

The reason for two brokers is that a flood of raw pages must not slow the control plane. This measures
it on the path that matters most, a throttle command reaching the fetchers:

1. A private namespace (``dualplane.namespaces.private_namespace``): its own throttle fanout and
   ``pages.raw``.
2. Probe (this process): the processor's publisher (:class:`CommandPublisher`: a thread that owns the
   connection and publishes with confirms) sends ``--commands`` throttle commands ``--interval-ms``
   apart, each for a new domain; a fetcher's :class:`ThrottleView` receives them on its own
   connection and queue. Latency is from ``submit`` to the view's ``on_change`` callback (decoded and
   applied), on one monotonic clock; p50, p99 and max per phase. The publisher waits for each
   confirm before the next publish (pika's blocking confirm channel), so commands closer together
   than a confirm round trip queue behind each other: at 5 ms apart on busy cores that queueing
   grows to dominate; the default 10 ms (100 commands/s, far above what the policy issues) keeps
   it smaller.
3. Phases, in turn each round: **idle** (nothing touches Kafka); **saturated**: ``--producers``
   separate processes produce ``raw_page`` envelopes with 50-200 KiB HTML-like bodies to ``pages.raw``
   as fast as Kafka takes them, with the fetcher's producer settings (idempotent, acks=all, zstd,
   linger 20 ms, 1 MB batches, 128 MiB local queue; ``control_plane/fetcher/outputs.py``), starting
   ``--warmup-s`` before the probe. Their delivery reports give the throughput Kafka sustained while
   the probe ran (uncompressed value MB/s), and how often their local queue was full: a full queue
   means Kafka, not the generator, set the pace, i.e. it was saturated. Then a **CPU control**: as
   many busy-loop processes, no Kafka at all (``--no-control`` skips it).
4. Per round the ratio p99 saturated / p99 idle (and control / idle); reported are the medians over
   ``--rounds``, against the goal: p99 under 1.5x idle.

What it isolates and what it does not: the load runs in other processes, so the figure is not GIL
contention inside the probe, and the planes share no broker, connection or thread. But on one machine
both brokers, the generators (zstd is CPU-heavy), the probe and anything else running share the same
cores (2 here), so part of any slowdown is plain CPU contention that brokers and fetchers on separate
hosts would not have: the ratio is an upper bound on the coupling of the planes. The CPU control shows
how much of it busy cores alone cause; ``--load-nice N`` runs the load at a lower priority, closer to
fetchers on other machines (the brokers keep theirs). On a shared machine the idle phase is noisy
too, so use several rounds.

    .venv/bin/python benchmarks/throttle_isolation.py --rounds 3 [--producers 2] [--json]

Needs the stack up (``dualplane stack up``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import statistics
import string
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics, raw_page_max_message_bytes
from dualplane.control_plane.fetcher.outputs import LOCAL_QUEUE_KBYTES
from dualplane.core.limits import Limits
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.throttle import ThrottleCommand, ThrottleView
from dualplane.data_plane.throttle.publisher import CommandPublisher
from dualplane.namespaces import drop_namespace, private_namespace

GOAL_RATIO = 1.5
PAGE_KIB = (50, 200)
PAGES_PER_PRODUCER = 32  # distinct bodies per generator, so zstd cannot just dedupe one page


# the probe: control plane


class Probe:
    """Throttle commands from the processor's publisher to a fetcher's view, timed."""

    def __init__(self, settings: Settings) -> None:
        self.sent_s: dict[str, float] = {}
        self.latency_ms: dict[str, float] = {}
        self.arrived = threading.Condition()
        self.view = ThrottleView(settings, on_change=self._on_change).start()
        self.publisher = CommandPublisher.from_settings(settings.amqp, settings.queues.throttle_exchange)
        self.publisher.start()

    def _on_change(self, domain: str, limits: Limits) -> None:
        now_s = time.perf_counter()
        with self.arrived:
            if domain in self.sent_s:
                self.latency_ms[domain] = (now_s - self.sent_s[domain]) * 1000
                self.arrived.notify_all()

    def measure(self, label: str, commands: int, interval_s: float) -> list[float]:
        """Latencies (ms) of ``commands`` new-domain commands sent ``interval_s`` apart."""
        domains = [f"{label}-{i}.isolation.test" for i in range(commands)]
        started_s = time.perf_counter()
        for i, domain in enumerate(domains):
            command = ThrottleCommand(domain=domain, concurrency=1, delay_ms=0, reason="isolation bench")
            time.sleep(max(0.0, started_s + i * interval_s - time.perf_counter()))  # fixed schedule
            with self.arrived:
                self.sent_s[domain] = time.perf_counter()
            self.publisher.submit(command)
        with self.arrived:
            self.arrived.wait_for(lambda: all(d in self.latency_ms for d in domains), timeout=30)
            missing = [d for d in domains if d not in self.latency_ms]
            if missing:
                raise RuntimeError(f"{len(missing)} of {commands} throttle commands never reached the view")
            return [self.latency_ms[d] for d in domains]

    def close(self) -> None:
        self.publisher.close()
        self.view.close()


def percentiles(latencies_ms: list[float]) -> dict[str, float]:
    """Nearest-rank p50 and p99, and the maximum."""
    ordered = sorted(latencies_ms)

    def rank(q: float) -> float:
        return ordered[max(0, round(q * len(ordered) + 0.4999) - 1)]

    return {"p50_ms": rank(0.50), "p99_ms": rank(0.99), "max_ms": ordered[-1]}


# the load: data plane, in other processes


def html_body(rng: random.Random, size_bytes: int, words: list[str]) -> bytes:
    """An HTML-like page of about ``size_bytes``: tags around random prose, compressible as pages are."""
    parts = ["<!doctype html><html><head><title>bench</title></head><body>"]
    length = len(parts[0])
    while length < size_bytes:
        paragraph = f'<p class="c{rng.randrange(20)}">{" ".join(rng.choices(words, k=40))}</p>\n'
        parts.append(paragraph)
        length += len(paragraph)
    return ("".join(parts) + "</body></html>").encode()


def page_values(seed: int) -> list[bytes]:
    """``raw_page`` Avro values as a fetcher produces them (body inline, with its digest and size)."""
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 10))) for _ in range(5000)]
    values = []
    for i in range(PAGES_PER_PRODUCER):
        body = html_body(rng, rng.randint(*PAGE_KIB) * 1024, words)
        page = raw_page(body, f"https://load-{seed}.test/p/{i}", fetched_at=datetime.now(UTC), job_id="bench")
        page.update(body_sha256=hashlib.sha256(body).hexdigest(), body_bytes=len(body))
        values.append(schemas.encode("raw_page", page))
    return values


def saturate(settings: Settings, seed: int, *, nice: int, ready: Event, stop: Event, results: Any) -> None:
    """One generator process: raw pages to ``pages.raw`` until ``stop``; reports its deliveries."""
    os.nice(nice)
    values = page_values(seed)
    producer = clients.producer(
        settings.kafka,
        **{
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": LOCAL_QUEUE_KBYTES,
            "message.max.bytes": raw_page_max_message_bytes(settings),
        },
    )
    delivered: list[tuple[float, int]] = []  # (monotonic s, value bytes): the same clock in every process
    queue_full = produced = 0
    ready.set()
    while not stop.is_set():
        value = values[produced % len(values)]
        try:
            producer.produce(
                settings.topics.pages_raw,
                value,
                f"https://load-{seed}.test/p/{produced}".encode(),
                on_delivery=_recorder(delivered, len(value)),
            )
            produced += 1
        except BufferError:  # 128 MiB waiting for Kafka: Kafka is the bottleneck
            queue_full += 1
            producer.poll(0.05)
            continue
        producer.poll(0)
    producer.purge()  # what is still queued is past the measurement; do not wait for it
    producer.flush(30)
    results.put({"delivered": delivered, "queue_full": queue_full})


def _recorder(delivered: list[tuple[float, int]], size_bytes: int) -> Any:
    """A delivery callback that records when Kafka acknowledged ``size_bytes``."""

    def on_delivery(error: Any, message: Any) -> None:
        if error is None:
            delivered.append((time.monotonic(), size_bytes))

    return on_delivery


def burn(settings: Settings, seed: int, *, nice: int, ready: Event, stop: Event, results: Any) -> None:
    """One process of the CPU control: a busy loop, no Kafka, until ``stop``."""
    os.nice(nice)
    ready.set()
    while not stop.is_set():
        for _ in range(100_000):
            pass
    results.put({"delivered": [], "queue_full": 0})


class Load:
    """``count`` processes running ``target``, started and warmed up on entry, stopped on exit."""

    def __init__(self, target: Any, settings: Settings, count: int, nice: int, warmup_s: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.stop = context.Event()
        self.results = context.Queue()
        self.readies = [context.Event() for _ in range(count)]
        self.processes = [
            context.Process(
                target=target,
                args=(settings, seed),
                kwargs={"nice": nice, "ready": ready, "stop": self.stop, "results": self.results},
                daemon=True,
            )
            for seed, ready in enumerate(self.readies)
        ]
        self.warmup_s = warmup_s
        self.reports: list[dict[str, Any]] = []

    def __enter__(self) -> Load:
        for process in self.processes:
            process.start()
        for ready in self.readies:
            if not ready.wait(120):
                raise RuntimeError("a load process did not start within 120 s")
        time.sleep(self.warmup_s)  # queues full and Kafka at its pace before the probe starts
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.reports = [self.results.get(timeout=120) for _ in self.processes]
        for process in self.processes:
            process.join(30)

    def throughput(self, start_s: float, end_s: float) -> dict[str, float]:
        """What Kafka acknowledged between ``start_s`` and ``end_s`` (monotonic), from every generator."""
        sizes = [n for report in self.reports for at, n in report["delivered"] if start_s <= at <= end_s]
        span_s = end_s - start_s
        return {
            "mb_per_s": sum(sizes) / span_s / 1e6,
            "pages_per_s": len(sizes) / span_s,
            "queue_full_events": sum(report["queue_full"] for report in self.reports),
        }


# rounds


def one_round(settings: Settings, probe: Probe, args: argparse.Namespace, n: int) -> dict[str, Any]:
    """Idle, then Kafka saturated, then (unless ``--no-control``) the cores busy without Kafka."""
    interval_s = args.interval_ms / 1000
    figures: dict[str, Any] = {"idle": percentiles(probe.measure(f"idle{n}", args.commands, interval_s))}
    with Load(saturate, settings, args.producers, args.load_nice, args.warmup_s) as load:
        start_s = time.monotonic()
        figures["saturated"] = percentiles(probe.measure(f"saturated{n}", args.commands, interval_s))
        end_s = time.monotonic()
    figures["kafka"] = load.throughput(start_s, end_s)
    time.sleep(args.settle_s)  # let Kafka write out the tail before the next phase
    figures["ratio_p99"] = figures["saturated"]["p99_ms"] / figures["idle"]["p99_ms"]
    if args.control:
        with Load(burn, settings, args.producers, args.load_nice, args.warmup_s):
            figures["cpu_control"] = percentiles(probe.measure(f"cpu{n}", args.commands, interval_s))
        figures["ratio_p99_cpu_control"] = figures["cpu_control"]["p99_ms"] / figures["idle"]["p99_ms"]
    return figures


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the rounds (ratios too: the median of per-round ratios)."""
    report: dict[str, Any] = {}
    for key, value in rounds[0].items():
        if isinstance(value, dict):
            report[key] = {name: statistics.median(r[key][name] for r in rounds) for name in value}
        else:
            report[key] = statistics.median(r[key] for r in rounds)
    report["kafka_during_saturation"] = report.pop("kafka")
    return {**report, "goal_ratio_p99": GOAL_RATIO}


def render(report: dict[str, Any], args: argparse.Namespace) -> None:
    console = Console()
    table = Table(
        title=f"throttle command delivery, RabbitMQ fanout -> ThrottleView (median of {args.rounds} rounds)"
    )
    for column in ("phase", "p50 ms", "p99 ms", "max ms", "p99 / idle"):
        table.add_column(column, justify="left" if column == "phase" else "right")
    kafka = report["kafka_during_saturation"]
    phases = [
        ("idle: nothing on Kafka", report["idle"], None),
        (
            f"Kafka saturated: {args.producers} raw-page producers, {kafka['mb_per_s']:.0f} MB/s, "
            f"{kafka['pages_per_s']:.0f} pages/s",
            report["saturated"],
            report["ratio_p99"],
        ),
    ]
    if "cpu_control" in report:
        label = f"control: {args.producers} busy-loop processes, no Kafka"
        phases.append((label, report["cpu_control"], report["ratio_p99_cpu_control"]))
    for label, phase, ratio in phases:
        ratio_text = "" if ratio is None else f"{ratio:.2f}x"
        table.add_row(label, *(f"{phase[k]:.2f}" for k in ("p50_ms", "p99_ms", "max_ms")), ratio_text)
    console.print(table)
    ratio = report["ratio_p99"]
    verdict = "[green]meets[/green]" if ratio < GOAL_RATIO else "[red]misses[/red]"
    console.print(
        f"p99 saturated / idle: [bold]{ratio:.2f}x[/bold], {verdict} the goal (< {GOAL_RATIO}x). "
        f"{args.commands} commands {args.interval_ms:g} ms apart per phase; the generators found their local "
        f"queue full {kafka['queue_full_events']:.0f} times (Kafka set the pace). Per-round ratios: "
        + ", ".join(f"{r['ratio_p99']:.2f}" for r in report["rounds"])
        + f". Load average before the run: {report['load_average_1m']:.1f} on {os.cpu_count()} cores."
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--commands", type=int, default=500, help="throttle commands per phase")
    parser.add_argument("--interval-ms", type=float, default=10.0, help="between two commands")
    parser.add_argument("--producers", type=int, default=2, help="raw-page generator processes")
    parser.add_argument("--load-nice", type=int, default=0, help="niceness of the generators (0-19)")
    parser.add_argument("--warmup-s", type=float, default=3.0, help="load before the probe starts")
    parser.add_argument("--settle-s", type=float, default=3.0, help="quiet after the load stops")
    parser.add_argument(
        "--no-control", dest="control", action="store_false", help="skip the CPU-only control phase"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]  # other people's work on a shared machine: context for the noise
    with tempfile.TemporaryDirectory(prefix="dualplane-bench-") as work:
        settings = private_namespace(Settings.from_env(), f"bench-{uuid.uuid4().hex[:8]}", Path(work))
        ensure_data_plane_topics(settings)
        probe = Probe(settings)
        try:
            rounds = [one_round(settings, probe, args, n) for n in range(args.rounds)]
        finally:
            probe.close()
            drop_namespace(settings)
    report = {**medians(rounds), "load_average_1m": load_before, "rounds": rounds}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    render(report, args)


if __name__ == "__main__":
    main()
