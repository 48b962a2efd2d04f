"""What rendering costs: the browser backend beside the direct backend, on the same pages, same run.

Fetches every product page of a script-drawn shop (the sample site's ``js_hosts``) with each backend
in turn (``direct``; ``profiled``: direct behind 100 profiles none of which matches, as a fetcher
fetches a domain without a profile; ``browser``), ``--concurrency`` at a time (the browser pool's
shipped size, 4), and reports per backend the median over ``--rounds`` of (the direct rows fetch
the pages ``--direct-repeats`` times a round, for steadier figures):

- pages/s: pages over the wall time of the round;
- CPU ms/page: user + system CPU of this process and of every process it started (Playwright's
  driver and Chromium's processes, counted once they exited), per page; and of this process alone
  (the fetcher's side: the backend, Playwright's client, the guarded subrequests);
- peak MB: the highest sum of PSS (proportional set size: shared pages split between the processes
  that share them) of this process and its descendants, sampled every 50 ms;
- priced: pages whose DOM carries the price (the script's result), to show what was bought.

``render: auto`` is measured on the pages it must leave alone: the product pages of a plain shop of
the same site (its prices in the HTML), fetched ``--direct-repeats`` times a round by ``auto``, a
profile with ``backend: auto`` whose domain has been learnt (its ``SAMPLES`` sample renders made
before the round's clock starts, and its browser closed once idle; what learning costs is the
``auto-learning`` row: one domain learnt, per fetcher process), beside ``plain-direct`` and
``plain-profiled`` (today's path) on the same pages in the same round; and on the script shop
(``auto-js``), where it must render every page.

The browser renders as the profile of ``docs/profiles.md`` says (wait for load and for
``body[data-priced]``), with the pool's shipped limits. Each round starts a new browser, so its
launch is in the figures (a fetcher launches one per 200 pages).

    .venv/bin/python benchmarks/rendering_cost.py --pages 24 --rounds 5 [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dualplane.control_plane.fetcher.backends.adaptive import SAMPLES
from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest
from dualplane.control_plane.fetcher.backends.browser import BrowserBackend, RenderOptions
from dualplane.control_plane.fetcher.backends.browser_pool import BrowserPool, PoolLimits
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.backends.profiled import ProfiledBackend
from dualplane.control_plane.fetcher.profiles import Profile, ProfileBook
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.sample_site import SiteSpec, ground_truth

CHROMIUM = "/usr/bin/chromium"
PRICED = b'<span class="price">'
IDLE_CLOSE_S = 0.5
SITE_PID = [0]  # the sample site's process, which is no part of any figure


def direct() -> FetchBackend:
    return DirectBackend(SsrfGuard(["127.0.0.1"]))


def no_match() -> ProfileBook:
    """A hundred profiles, none of them for the benchmark's host: the lookup every fetch pays."""
    return ProfileBook(Profile(f"p{i}", (f"*.shop{i}.example", f"shop{i}.example")) for i in range(100))


class Book:
    """The fetcher's :class:`ProfileView` without Kafka: its book behind a lock."""

    def __init__(self, book: ProfileBook) -> None:
        self.book, self.lock = book, threading.Lock()

    def match(self, domain: str) -> Profile | None:
        with self.lock:
            return self.book.match(domain)

    def named(self, name: str) -> Profile | None:
        with self.lock:
            return self.book.profiles.get(name)

    def close(self) -> None:
        pass


def profiled() -> FetchBackend:
    """The direct backend behind profiles (as every fetcher now runs), for a domain without one."""
    plain = direct()
    return ProfiledBackend(plain, DirectBackend(SsrfGuard()), Book(no_match()), _no_browser)


def _no_browser() -> BrowserPool:
    raise AssertionError("no profile renders here")


def browser() -> FetchBackend:
    options = RenderOptions(wait="load", selector="body[data-priced]", wait_s=10)
    return BrowserBackend(
        DirectBackend(SsrfGuard(["127.0.0.1"])), BrowserPool(CHROMIUM, PoolLimits()), options
    )


def auto(limits: PoolLimits | None = None) -> FetchBackend:
    """Every domain with ``backend: auto`` (the rendering waits of docs/profiles.md), behind profiles."""
    profile = Profile("auto", ("127.0.0.1:*",), backend="auto", wait_selector="body[data-priced]")
    book = ProfileBook([*no_match().profiles.values(), profile])
    pool = lambda: BrowserPool(CHROMIUM, limits or PoolLimits())  # noqa: E731
    return ProfiledBackend(direct(), DirectBackend(SsrfGuard(["127.0.0.1"])), Book(book), pool)


def auto_learnt() -> FetchBackend:
    """``auto`` whose idle browser closes after 0.5 s instead of the shipped 60 s (only so that the
    round waits less for it: what a fetch costs does not depend on it)."""
    return auto(PoolLimits(idle_close_s=IDLE_CLOSE_S))


class PeakMemory:
    """Samples the PSS of this process and its descendants on a thread until stopped."""

    def __init__(self, exclude: int) -> None:
        self.exclude = exclude
        self.peak_kib = 0
        self.generation = 0  # a sample taken across a reset is dropped
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def reset(self) -> None:
        self.generation += 1
        self.peak_kib = 0

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            generation = self.generation
            kib = sum(_pss_kib(pid) for pid in _family(os.getpid(), self.exclude))
            if generation == self.generation:
                self.peak_kib = max(self.peak_kib, kib)


async def fetch_all(
    make: Callable[[], FetchBackend], urls: list[str], concurrency: int, warm: list[str], clock: Clock
) -> int:
    """Fetch ``warm`` (untimed), start ``clock``, fetch ``urls``; how many came with their price.
    The clock stops once the backend is closed, so the browser's processes have exited and count."""
    slots = asyncio.Semaphore(concurrency)
    async with make() as backend:

        async def one(url: str) -> bool:
            async with slots:
                request = FetchRequest(url, "dualplane-bench", 5, 10, 2**22, total_timeout_s=60)
                return PRICED in (await backend.fetch(request)).body

        for url in warm:  # one at a time, as the first pages of a domain come
            await one(url)
        if warm:  # the domain is learnt: its browser closes once idle, as a fetcher's does
            await idle_closed()
        clock.start()
        priced = sum(await asyncio.gather(*(one(url) for url in urls)))
    clock.stop()
    return priced


async def idle_closed(timeout_s: float = 120.0) -> None:
    """Wait until this process has no child left but the site (the pool closed the browser and
    Playwright's driver), so that their CPU is counted before the clock starts."""
    deadline = time.monotonic() + timeout_s
    while any(_descendants_but_site()) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)


def _descendants_but_site() -> list[int]:
    me = os.getpid()
    return [pid for pid in _family(me, SITE_PID[0]) if pid != me]


class Clock:
    """Wall and CPU time (this process; with the processes it started, once they exited), and the
    peak memory from its start."""

    def __init__(self, memory: PeakMemory) -> None:
        self.memory = memory

    def start(self) -> None:
        self.memory.reset()
        self.times, self.started = os.times(), time.perf_counter()

    def stop(self) -> None:
        self.wall_s, after = time.perf_counter() - self.started, os.times()
        self.ours_s = sum(getattr(after, f) - getattr(self.times, f) for f in ("user", "system"))
        self.children_s = sum(
            getattr(after, f) - getattr(self.times, f) for f in ("children_user", "children_system")
        )


@contextlib.contextmanager
def serving(spec: SiteSpec) -> Iterator[subprocess.Popen[bytes]]:
    """The sample site in a process of its own, so that its CPU and memory are in no figure."""
    command = [
        sys.executable,
        "-m",
        "dualplane",
        "sample-site",
        "--hosts",
        str(spec.hosts),
        "--pages",
        str(spec.pages_per_host),
    ]
    command += [
        "--seed",
        str(spec.seed),
        "--latency-ms",
        str(spec.latency_ms),
        "--base-port",
        str(spec.base_port),
    ]
    site = subprocess.Popen(
        [*command, "--js-host", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", spec.base_port), 1):
                break
            if time.monotonic() > deadline or site.poll() is not None:
                raise RuntimeError("the sample site did not start")
            time.sleep(0.2)
        yield site
    finally:
        site.terminate()
        site.wait(30)


def round_of(
    make: Callable[[], FetchBackend], urls: list[str], concurrency: int, site: int, warm: list[str]
) -> dict[str, float]:
    with PeakMemory(exclude=site) as memory:
        clock = Clock(memory)
        priced = asyncio.run(fetch_all(make, urls, concurrency, warm, clock))
    return {
        "pages_per_s": len(urls) / clock.wall_s,
        "cpu_ms_per_page": (clock.ours_s + clock.children_s) * 1000 / len(urls),
        "cpu_ms_per_page_ours": clock.ours_s * 1000 / len(urls),
        "peak_mb": memory.peak_kib / 1024,
        "priced": priced,
    }


def learning_round(urls: list[str], site: int) -> dict[str, float]:
    """What learning one domain costs auto: its ``SAMPLES`` first pages, each fetched and rendered."""
    return round_of(auto, urls[:SAMPLES], 1, site, [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=40, help="product pages of each shop")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=PoolLimits().max_contexts)
    parser.add_argument("--direct-repeats", type=int, default=20, help="rounds of the pages per direct round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    # Host 0: a script-drawn shop; host 3: a plain shop (its prices in the HTML), the same site.
    spec = SiteSpec(
        seed=7, hosts=4, pages_per_host=args.pages, latency_ms=5, base_port=_free_port(), js_hosts=(0,)
    )
    products = ground_truth(spec).products
    js = [p.url for p in products if p.url.startswith(spec.origin(0) + "/")]
    plain = [p.url for p in products if p.url.startswith(spec.origin(3) + "/")]
    rows: dict[str, tuple[Callable[[], FetchBackend], list[str], list[str]]] = {
        "direct": (direct, js * args.direct_repeats, []),
        "profiled": (profiled, js * args.direct_repeats, []),
        "browser": (browser, js, []),
        "auto-js": (auto, js, []),
        "plain-direct": (direct, plain * args.direct_repeats, []),
        "plain-profiled": (profiled, plain * args.direct_repeats, []),
        "auto": (auto_learnt, plain * args.direct_repeats, plain[:SAMPLES]),  # learnt, untimed
    }
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in [*rows, "auto-learning"]}
    with serving(spec) as site:
        SITE_PID[0] = site.pid
        for _ in range(args.rounds):  # interleaved, so all see the same machine
            for name, (make, urls, warm) in rows.items():
                rounds[name].append(round_of(make, urls, args.concurrency, site.pid, warm))
            rounds["auto-learning"].append(learning_round(plain, site.pid))
    result: dict[str, Any] = {name: _medians(figures) for name, figures in rounds.items()}
    for name, peer in (("browser", "direct"), ("profiled", "direct"), ("auto", "plain-profiled"),
                       ("auto", "plain-direct"), ("auto-js", "browser")):  # fmt: skip
        result[f"{name}_over_{peer}"] = {
            key: result[name][key] / result[peer][key]
            for key in ("pages_per_s", "cpu_ms_per_page", "peak_mb")
        }
    report: dict[str, Any] = {
        "pages": len(js),
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        **result,
    }
    if args.json:
        print(json.dumps({**report, "all_rounds": rounds}, indent=2))
        return
    print(
        f"{len(js)} product pages of a JS shop and {len(plain)} of a plain shop, "
        f"{args.concurrency} at a time, medians of {args.rounds} rounds"
    )
    print(
        f"{'backend':<15} {'pages/s':>8} {'CPU ms/page':>12} {'(this process)':>15} "
        f"{'peak MB':>8} {'priced':>7}"
    )
    for name in rounds:
        row = result[name]
        print(
            f"{name:<15} {row['pages_per_s']:>8.1f} {row['cpu_ms_per_page']:>12.2f} "
            f"{row['cpu_ms_per_page_ours']:>15.2f} {row['peak_mb']:>8.0f} {row['priced']:>7.0f}"
        )
    for key, ratio in result.items():
        if "_over_" in key:
            print(
                f"{key.replace('_over_', '/')}: {ratio['pages_per_s']:.3f}x pages/s, "
                f"{ratio['cpu_ms_per_page']:.3f}x CPU/page, {ratio['peak_mb']:.2f}x peak memory"
            )


def _medians(figures: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(round_[key] for round_ in figures) for key in figures[0]}


def _family(root: int, exclude: int) -> list[int]:
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    family, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier and pid != exclude]
        family += frontier
    return family


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass  # gone meanwhile
    return 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


if __name__ == "__main__":
    main()
