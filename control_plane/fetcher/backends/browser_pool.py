"""A bounded pool of headless Chromium contexts for one fetcher process, driven by Playwright.

One browser process serves every render of the fetcher; each render gets a fresh context (its own
cookies, cache and storage, closed after the page), and at most ``max_contexts`` contexts are open
at once, so the browser's memory is bounded by the pool size rather than by the fetcher's
concurrency. A browser is retired after ``pages_per_launch`` renders (Chromium's memory creeps up
over thousands of pages) and closed once its last context is; the next render launches a new one.
A browser that has rendered nothing for ``idle_close_s`` is closed too, with Playwright's driver
(``render: auto`` renders a domain's first pages only, and most domains then need no browser at
all): the process is back as it was before its first render.
A browser that dies (killed, out of memory) is noticed by its ``disconnected`` event or by
Playwright's error in the render: the render fails with :class:`BrowserCrashed` (a connection
error, so its task is retried, never lost), and the next render launches a new browser.

Chromium comes from the machine (Debian's ``chromium`` package): ``playwright install`` is never
needed. ``--host-resolver-rules=MAP * ~NOTFOUND`` leaves the browser unable to resolve or reach any
host by itself, so what it loads is only what :mod:`.browser` fetched through the SSRF guard and
handed it; a preconnect hint or a WebSocket that interception does not see then reaches nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from dualplane.control_plane.fetcher.exceptions import BrowserCrashed

log = logging.getLogger(__name__)

# Flags known to work with Debian's chromium here; the last one is the SSRF backstop (see above).
LAUNCH_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
LAUNCH_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PoolLimits:
    """How much browser one fetcher may run: contexts at once, renders per browser, JS heap per page."""

    max_contexts: int = 4
    pages_per_launch: int = 200
    js_heap_mb: int = 256
    idle_close_s: float = 60.0

    def __post_init__(self) -> None:
        if (
            self.max_contexts < 1
            or self.pages_per_launch < 1
            or self.js_heap_mb < 16
            or self.idle_close_s <= 0
        ):
            raise ValueError(
                f"browser pool limits out of range: max_contexts={self.max_contexts} (>= 1), "
                f"pages_per_launch={self.pages_per_launch} (>= 1), js_heap_mb={self.js_heap_mb} (>= 16), "
                f"idle_close_s={self.idle_close_s} (> 0)"
            )


@dataclass
class _Launch:
    """One browser process, the contexts it has open, and whether it is gone."""

    browser: Browser
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    in_use: int = 0
    renders: int = 0
    retired: bool = False

    @property
    def dead(self) -> bool:
        return self.gone.is_set() or not self.browser.is_connected()


@dataclass(frozen=True)
class Lease:
    """A fresh context, and an event set when its browser dies (Playwright may not say so in time)."""

    context: BrowserContext
    gone: asyncio.Event


class BrowserPool:
    """Hands out fresh browser contexts, at most ``limits.max_contexts`` at a time.

    Use from one event loop (Playwright's rule). ``executable`` is the Chromium binary; ``marker``
    is one more command-line switch, which Chromium ignores, so that an operator (or a test) can
    tell this pool's browser processes apart.
    """

    def __init__(self, executable: str, limits: PoolLimits | None = None, *, marker: str = "") -> None:
        self.executable = executable
        self.limits = limits or PoolLimits()
        self.marker = marker
        self.launches = 0
        self._slots = asyncio.Semaphore(self.limits.max_contexts)
        self._launch_lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._current: _Launch | None = None
        self._closed = False
        self._idle: asyncio.TimerHandle | None = None
        self._idle_task: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def context(self, **options: Any) -> AsyncIterator[Lease]:
        """A new context with ``options`` (``BrowserContext`` keyword arguments), closed on exit.

        Raises :class:`BrowserCrashed` when the browser cannot be launched or dies meanwhile.
        """
        async with self._slots:
            self._cancel_idle()
            launch = await self._launch()
            launch.in_use += 1
            launch.renders += 1
            if launch.renders >= self.limits.pages_per_launch:
                launch.retired = True  # the next render launches a new browser
            try:
                try:
                    context = await launch.browser.new_context(**options)
                except PlaywrightError as error:
                    raise BrowserCrashed(
                        f"the browser could not open a context ({_first_line(error)}); retrying"
                    ) from error
                try:
                    yield Lease(context, launch.gone)
                finally:
                    if not launch.dead:
                        await _close_quietly(context)
            finally:
                launch.in_use -= 1
                if (launch.retired or launch.dead) and launch.in_use == 0:
                    await _close_quietly(launch.browser)
                elif launch.in_use == 0 and not self._closed:
                    self._close_when_idle(launch)

    async def aclose(self) -> None:
        """Close the browser and Playwright's driver. Idempotent."""
        self._closed = True
        self._cancel_idle()
        launch, self._current = self._current, None
        if launch is not None:
            launch.retired = True  # closed by us, not dead
            await _close_quietly(launch.browser)
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            await playwright.stop()

    async def _launch(self) -> _Launch:
        async with self._launch_lock:
            if self._closed:
                raise RuntimeError("this BrowserPool is closed; make a new one")
            current = self._current
            if current is not None and not current.retired and not current.dead:
                return current
            self._current = await self._start_browser()
            return self._current

    async def _start_browser(self) -> _Launch:
        try:
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            browser = await self._playwright.chromium.launch(
                executable_path=self.executable,
                args=[
                    *LAUNCH_FLAGS,
                    f"--js-flags=--max-old-space-size={self.limits.js_heap_mb}",
                    *self._marker(),
                ],
                timeout=LAUNCH_TIMEOUT_S * 1000,
                handle_sigint=False,
                handle_sigterm=False,  # the fetcher drains its renders first, then closes the pool
            )
        except PlaywrightError as error:
            raise BrowserCrashed(
                f"could not start the browser {self.executable} ({_first_line(error)}); install Debian's "
                "chromium (`apt-get install chromium`) or set DUALPLANE_FETCH_BROWSER_EXECUTABLE"
            ) from error
        self.launches += 1
        launch = _Launch(browser)
        browser.on("disconnected", lambda _browser: _mark_dead(launch))
        log.info("browser %s launched (%s, launch %d)", browser.version, self.executable, self.launches)
        return launch

    def _close_when_idle(self, launch: _Launch) -> None:
        self._cancel_idle()

        def close() -> None:
            self._idle_task = asyncio.ensure_future(self._close_idle(launch))

        self._idle = asyncio.get_running_loop().call_later(self.limits.idle_close_s, close)

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    async def _close_idle(self, launch: _Launch) -> None:
        """Close the idle browser and Playwright's driver: the process is as before its first render."""
        async with self._launch_lock:  # a render that comes meanwhile waits, then launches anew
            if launch.in_use or launch.retired or launch is not self._current:
                return
            launch.retired = True  # closed by us, not dead
            self._current = None
            await _close_quietly(launch.browser)
            playwright, self._playwright = self._playwright, None
            if playwright is not None:
                await playwright.stop()
        log.info("browser closed after %.0f s without a render", self.limits.idle_close_s)

    def _marker(self) -> tuple[str, ...]:
        return (f"--dualplane-pool={self.marker}",) if self.marker else ()


def _mark_dead(launch: _Launch) -> None:
    if not launch.retired:
        log.warning("the browser died; the next render launches a new one")
    launch.gone.set()


async def _close_quietly(closable: Browser | BrowserContext) -> None:
    # Already gone with its browser: nothing to release. Bounded, as a dying browser may not answer.
    with contextlib.suppress(PlaywrightError, TimeoutError):
        await asyncio.wait_for(closable.close(), CLOSE_TIMEOUT_S)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
