"""Run a sample site: bind one port per host (on loopback by default), served from one asyncio loop.

``SampleSite(spec).start()`` serves from a background thread (tests, benchmarks, the demo);
``SampleSite(spec).run()`` serves in the foreground until interrupted (the CLI).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from types import TracebackType

from aiohttp import web

from dualplane.sample_site.exceptions import SampleSiteError
from dualplane.sample_site.reachability import Reachability, explore
from dualplane.sample_site.routes import SiteModel
from dualplane.sample_site.server import SiteState, build_app
from dualplane.sample_site.spec import LOOPBACK, AntiBot, Changes, SiteSpec
from dualplane.sample_site.stats import LogEntry, SiteStats
from dualplane.sample_site.truth import Truth, changed_pages, changed_products, ground_truth

# Free ranges are picked below Linux's ephemeral ports (32768+), where outgoing connections live.
FREE_RANGE = (20000, 32768)
BIND_ATTEMPTS = 100
SHUTDOWN_TIMEOUT_S = 2.0

ReadyCallback = Callable[["SampleSite"], None]


class SampleSite:
    """A running sample site. Use as a context manager, or ``start()`` / ``stop()``.

    ``bind`` is the address it listens on: loopback unless it serves other machines (containers),
    which then reach it by ``spec.public_host``.
    """

    def __init__(
        self, spec: SiteSpec | None = None, bind: str = LOOPBACK, clock: Callable[[], float] = time.time
    ) -> None:
        self._requested = spec or SiteSpec()
        self._bind = bind
        self._clock = clock
        self._state: SiteState | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @property
    def spec(self) -> SiteSpec:
        """The spec being served: once started, ``base_port`` is the real first port."""
        return self._state.spec if self._state is not None else self._requested

    @property
    def urls(self) -> list[str]:
        """Base URL of each host, e.g. ``http://127.0.0.1:8101`` (the spec's ``public_host``)."""
        return self.spec.origins()

    @property
    def seeds(self) -> list[str]:
        """Each host's home page, where a crawl starts."""
        return [url + "/" for url in self.urls]

    @property
    def model(self) -> SiteModel:
        return self._running_state().model

    def __enter__(self) -> SampleSite:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, timeout_s: float = 10.0) -> SampleSite:
        """Serve from a background thread; returns once every host accepts connections."""
        if self._thread is not None:
            raise SampleSiteError("this SampleSite is already started; stop() it first")
        self._ready.clear()
        self._failure = None
        self._thread = threading.Thread(target=self._thread_main, name="sample-site", daemon=True)
        self._thread.start()
        self.wait_ready(timeout_s)
        return self

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Block until every host accepts connections; re-raises why the site failed to start."""
        if not self._ready.wait(timeout_s):
            raise SampleSiteError(f"the sample site did not become ready within {timeout_s} s")
        if self._failure is not None:
            raise SampleSiteError(f"the sample site failed to start: {self._failure}") from self._failure

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop serving and wait for the background thread (if any) to finish. Idempotent."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def run(self, on_ready: ReadyCallback | None = None) -> None:
        """Serve in the foreground until :meth:`stop` or Ctrl-C (which propagates as KeyboardInterrupt)."""
        asyncio.run(self.serve(on_ready))

    async def serve(self, on_ready: ReadyCallback | None = None) -> None:
        """Serve on the running loop until :meth:`stop` is called or this task is cancelled."""
        sockets = bind_ports(self._requested.base_port, self._requested.hosts, self._bind)
        runners: list[web.AppRunner] = []
        try:
            state = SiteState(self._resolved(sockets[0].getsockname()[1]), self._clock)
            for host, sock in enumerate(sockets):
                runner = web.AppRunner(
                    build_app(state, host), access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S
                )
                await runner.setup()
                runners.append(runner)
                await web.SockSite(runner, sock).start()
            self._state, self._loop, self._stopping = state, asyncio.get_running_loop(), asyncio.Event()
            self._ready.set()
            if on_ready is not None:
                on_ready(self)
            await self._stopping.wait()
        finally:
            self._loop = self._stopping = None
            for runner in runners:
                await runner.cleanup()
            for sock in sockets:
                sock.close()

    def _resolved(self, base_port: int) -> SiteSpec:
        """The requested spec with its real first port and, if it changes, the epoch of its changes."""
        spec, changes = replace(self._requested, base_port=base_port), self._requested.changes
        if changes is not None and not changes.epoch_s:
            spec = replace(spec, changes=replace(changes, epoch_s=self._clock()))
        return spec

    def _thread_main(self) -> None:
        try:
            asyncio.run(self.serve())
        except BaseException as error:  # reported by wait_ready() in the starting thread
            self._failure = error
        finally:
            self._ready.set()

    def _running_state(self) -> SiteState:
        if self._state is None:
            raise SampleSiteError(
                "the sample site has not been started; call start() or use it in a with block"
            )
        return self._state

    def stats(self) -> SiteStats:
        """Request counts, concurrency and rates per host, read from memory."""
        return self._running_state().stats()

    def reset_stats(self) -> None:
        self._running_state().recorder.reset()

    def log(self, host: int | None = None) -> list[LogEntry]:
        """Every recorded request of ``host`` (all hosts, in time order, when None)."""
        return self._running_state().recorder.entries(host)

    def set_anti_bot(self, host: int, policy: AntiBot | None) -> None:
        """Switch host ``host``'s anti-bot policy at runtime (None: let everything through)."""
        self._running_state().set_anti_bot(host, policy)

    def anti_bot(self, host: int) -> AntiBot | None:
        return self._running_state().policies[host]

    def truth(self) -> Truth:
        return ground_truth(self.spec)

    def step(self, at_s: float | None = None) -> int:
        """The time step of a changing site at site time ``at_s`` (default: now, by its clock)."""
        changes = self._changes()
        return changes.step(self._clock() if at_s is None else at_s)

    def changed_products(self, since_s: float, until_s: float) -> set[str]:
        """Product URLs whose price or stock differ between site times ``since_s`` and ``until_s``."""
        return changed_products(self.spec, self.step(since_s), self.step(until_s))

    def changed_pages(self, since_s: float, until_s: float) -> set[str]:
        """Reachable page URLs whose body differs between site times ``since_s`` and ``until_s``:
        a conditional GET of any other page, with the validators of ``since_s``, gets a 304."""
        return changed_pages(self.spec, self.step(since_s), self.step(until_s))

    def _changes(self) -> Changes:
        changes = self.spec.changes
        if changes is None or not changes.epoch_s:
            raise SampleSiteError("only a started site with SiteSpec(changes=...) changes over time")
        return changes

    def explore(self) -> Reachability:
        return explore(self.spec)

    def reachable_urls(self) -> set[str]:
        return self.explore().pages


def bind_ports(base_port: int, count: int, bind: str = LOOPBACK) -> list[socket.socket]:
    """Listening sockets on ``count`` consecutive ports of ``bind`` from ``base_port`` (0: a free range)."""
    if base_port:
        sockets = _bind_range(base_port, count, bind)
        if sockets is None:
            raise SampleSiteError(
                f"ports {base_port}..{base_port + count - 1} on {bind} are not all free; "
                "choose another base port, or 0 to pick free ports"
            )
        return sockets
    chooser = random.Random()
    for _ in range(BIND_ATTEMPTS):
        sockets = _bind_range(chooser.randrange(FREE_RANGE[0], FREE_RANGE[1] - count), count, bind)
        if sockets is not None:
            return sockets
    raise SampleSiteError(f"found no {count} consecutive free ports in {FREE_RANGE}; give a base port")


def _bind_range(base_port: int, count: int, bind: str) -> list[socket.socket] | None:
    sockets: list[socket.socket] = []
    try:
        for port in range(base_port, base_port + count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((bind, port))
            sock.listen(1024)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        return None
    return sockets
