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

The browser renders as the profile of ``docs/profiles.md`` says (wait for load and for
``body[data-priced]``), with the pool's shipped limits. Each round starts a new browser, so its
launch is in the figures (a fetcher launches one per 200 pages).

    .venv/bin/python benchmarks/rendering_cost.py --pages 40 --rounds 3 [--json]
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


BACKENDS: dict[str, Callable[[], FetchBackend]] = {}  # filled below, once all are defined


class PeakMemory:
    """Samples the PSS of this process and its descendants on a thread until stopped."""

    def __init__(self, exclude: int) -> None:
        self.exclude = exclude
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak_kib = max(
                self.peak_kib, sum(_pss_kib(pid) for pid in _family(os.getpid(), self.exclude))
            )


async def fetch_all(make: Callable[[], FetchBackend], urls: list[str], concurrency: int) -> int:
    slots = asyncio.Semaphore(concurrency)
    async with make() as backend:

        async def one(url: str) -> bool:
            async with slots:
                request = FetchRequest(url, "dualplane-bench", 5, 10, 2**22, total_timeout_s=60)
                return PRICED in (await backend.fetch(request)).body

        return sum(await asyncio.gather(*(one(url) for url in urls)))


@contextlib.contextmanager
def serving(spec: SiteSpec) -> Iterator[subprocess.Popen[bytes]]:
    """The sample site in a process of its own, so that its CPU and memory are in no figure."""
    command = [
        sys.executable,
        "-m",
        "dualplane",
        "sample-site",
        "--hosts",
        "1",
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
    make: Callable[[], FetchBackend], urls: list[str], concurrency: int, site: int
) -> dict[str, float]:
    before, started = os.times(), time.perf_counter()
    with PeakMemory(exclude=site) as memory:
        priced = asyncio.run(fetch_all(make, urls, concurrency))
    wall_s, after = time.perf_counter() - started, os.times()
    ours_s = sum(getattr(after, f) - getattr(before, f) for f in ("user", "system"))
    started_s = sum(getattr(after, f) - getattr(before, f) for f in ("children_user", "children_system"))
    return {
        "pages_per_s": len(urls) / wall_s,
        "cpu_ms_per_page": (ours_s + started_s) * 1000 / len(urls),
        "cpu_ms_per_page_ours": ours_s * 1000 / len(urls),
        "peak_mb": memory.peak_kib / 1024,
        "priced": priced,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=40, help="product pages of the JS shop")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=PoolLimits().max_contexts)
    parser.add_argument("--direct-repeats", type=int, default=20, help="rounds of the pages per direct round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    spec = SiteSpec(
        seed=7, hosts=1, pages_per_host=args.pages, latency_ms=5, base_port=_free_port(), js_hosts=(0,)
    )
    urls = [product.url for product in ground_truth(spec).products]
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in BACKENDS}
    with serving(spec) as site:
        for _ in range(args.rounds):  # interleaved, so all see the same machine
            for name, make in BACKENDS.items():
                # The direct fetches take ms: the same pages go round more often, for steadier figures.
                pages = urls if name == "browser" else urls * args.direct_repeats
                rounds[name].append(round_of(make, pages, args.concurrency, site.pid))
    result = {name: _medians(figures) for name, figures in rounds.items()}
    for name in ("browser", "profiled"):
        result[f"{name}_over_direct"] = {
            key: result[name][key] / result["direct"][key]
            for key in ("pages_per_s", "cpu_ms_per_page", "peak_mb")
        }
    report: dict[str, Any] = {
        "pages": len(urls),
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        **result,
    }
    if args.json:
        print(json.dumps({**report, "all_rounds": rounds}, indent=2))
        return
    print(
        f"{len(urls)} product pages of a JS shop, {args.concurrency} at a time, "
        f"medians of {args.rounds} rounds"
    )
    print(
        f"{'backend':<8} {'pages/s':>8} {'CPU ms/page':>12} {'(this process)':>15} "
        f"{'peak MB':>8} {'priced':>7}"
    )
    for name in BACKENDS:
        row = result[name]
        print(
            f"{name:<8} {row['pages_per_s']:>8.1f} {row['cpu_ms_per_page']:>12.1f} "
            f"{row['cpu_ms_per_page_ours']:>15.1f} "
            f"{row['peak_mb']:>8.0f} {row['priced']:>7.0f}"
        )
    for name in ("browser", "profiled"):
        ratio = result[f"{name}_over_direct"]
        print(
            f"{name}/direct: {ratio['pages_per_s']:.3f}x pages/s, {ratio['cpu_ms_per_page']:.3f}x CPU/page, "
            f"{ratio['peak_mb']:.2f}x peak memory"
        )


BACKENDS.update({"direct": direct, "profiled": profiled, "browser": browser})


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
