"""Rendering in our own headless Chromium, every request of it through the direct backend's SSRF guard.

:class:`BrowserBackend` fetches the page with the direct backend first (redirects, conditional GET,
size caps and the guard as for any page). An HTML 2xx is then rendered: the browser is handed that
answer for its navigation, and every other request it makes (scripts, stylesheets, XHR, frames) is
intercepted (:mod:`.browser_routes`) and fetched by the same guarded, pinned client, or refused. The
DOM as it stands once the wait is over becomes the body, in UTF-8, marked by the
``x-dualplane-rendered`` header, which ``pages.raw`` keeps; extraction and replay read it like any
page. Answers that are not HTML 2xx (redirects, 304s, errors, PDFs) are returned as fetched.

Settings read by :meth:`BrowserBackend.from_settings`: ``DUALPLANE_FETCH_BROWSER_EXECUTABLE``,
``_BROWSER_CONTEXTS``, ``_BROWSER_PAGES_PER_LAUNCH``, ``_BROWSER_WAIT``, ``_BROWSER_WAIT_SELECTOR``,
``_BROWSER_WAIT_S``, and what :meth:`DirectBackend.from_settings` reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from dualplane.control_plane.fetcher.backends.base import (
    RENDERED_HEADER,
    FetchBackend,
    FetchRequest,
    FetchResponse,
)
from dualplane.control_plane.fetcher.backends.browser_pool import BrowserPool, Lease, PoolLimits
from dualplane.control_plane.fetcher.backends.browser_routes import RenderOptions, Router, refuse_socket
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.exceptions import (
    BrowserCrashed,
    ConnectionFailed,
    FetchTimeout,
    TooLarge,
)

if TYPE_CHECKING:
    from dualplane.core.settings import Settings

log = logging.getLogger(__name__)

DEATH_NOTICE_S = 2.0  # how long a failed render waits to learn whether its browser died
RENDERED_TYPES = ("text/html", "application/xhtml+xml")
# Headers of the fetched answer that no longer describe the rendered body.
STALE_HEADERS = frozenset({"content-length", "content-encoding", "content-type"})

__all__ = ["RENDERED_HEADER", "BrowserBackend", "RenderOptions"]


class BrowserBackend(FetchBackend):
    """Fetches with ``direct``, then renders HTML answers in a context of ``pool``, as ``options`` say."""

    def __init__(
        self, direct: DirectBackend, pool: BrowserPool, options: RenderOptions | None = None
    ) -> None:
        self.direct = direct
        self.pool = pool
        self.options = options or RenderOptions()

    @classmethod
    def from_settings(cls, settings: Settings) -> BrowserBackend:
        fetch = settings.fetch
        limits = PoolLimits(
            max_contexts=fetch.browser_contexts, pages_per_launch=fetch.browser_pages_per_launch
        )
        options = RenderOptions(
            wait=fetch.browser_wait, selector=fetch.browser_wait_selector or None, wait_s=fetch.browser_wait_s
        )
        return cls(
            DirectBackend.from_settings(settings), BrowserPool(fetch.browser_executable, limits), options
        )

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        """See :meth:`FetchBackend.fetch`; a dead browser raises ``BrowserCrashed`` (retried)."""
        started = time.perf_counter()
        return await self.render(request, await self.direct.fetch(request), started)

    async def render(self, request: FetchRequest, response: FetchResponse, started: float) -> FetchResponse:
        """``response``, fetched directly for ``request`` at ``started`` (``perf_counter``), rendered if
        it is HTML 2xx, else as it is (``render: auto`` renders what it fetched, ``adaptive.py``)."""
        if not _renderable(response):
            return response
        spent_s = time.perf_counter() - started
        budget_s = None if request.total_timeout_s is None else max(0.1, request.total_timeout_s - spent_s)
        try:
            async with asyncio.timeout(budget_s):
                html = await self._render(request, response)
        except TimeoutError as error:
            raise FetchTimeout(
                f"{response.final_url}: rendering did not finish within total_timeout_s="
                f"{request.total_timeout_s} s",
                final_url=response.final_url,
            ) from error
        return _rendered(request, response, html.encode("utf-8"), started)

    async def aclose(self) -> None:
        await self.pool.aclose()
        await self.direct.aclose()

    async def _render(self, request: FetchRequest, response: FetchResponse) -> str:
        url = response.final_url
        async with self.pool.context(
            user_agent=request.user_agent,  # navigator.userAgent; the requests are ours (browser_routes)
            accept_downloads=False,
            service_workers="block",  # a worker's requests would escape the page's interception
        ) as lease:
            router = Router(self.direct, request, response, self.options)
            try:
                return await _unless_gone(self._open(lease.context, router, url), lease.gone, url)
            except PlaywrightError as error:
                raise await _failure(lease, url, error) from error
            finally:
                router.report()

    async def _open(self, context: BrowserContext, router: Router, url: str) -> str:
        await context.route("**/*", router.handle)
        await context.route_web_socket("**/*", refuse_socket)
        return await self._load(await context.new_page(), url)

    async def _load(self, page: Page, url: str) -> str:
        """Navigate, wait as the options say (at most ``wait_s`` each step), and read the DOM."""
        timeout_ms = self.options.wait_s * 1000
        await page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
        try:
            await page.wait_for_load_state("load", timeout=timeout_ms)
            if self.options.wait == "networkidle":
                await page.wait_for_load_state("networkidle", timeout=timeout_ms)
            if self.options.selector:
                await page.wait_for_selector(self.options.selector, state="attached", timeout=timeout_ms)
        except PlaywrightTimeout:  # a time limit, not a failure: the DOM as it stands is what we keep
            log.debug("%s: stopped waiting after %.1f s", url, self.options.wait_s)
        return await page.content()


def _renderable(response: FetchResponse) -> bool:
    return 200 <= response.status < 300 and response.content_type in RENDERED_TYPES and bool(response.body)


def _rendered(request: FetchRequest, response: FetchResponse, body: bytes, started: float) -> FetchResponse:
    if len(body) > request.max_bytes:
        raise TooLarge(
            f"{response.final_url}: the rendered page is {len(body)} bytes, "
            f"over max_bytes={request.max_bytes}",
            final_url=response.final_url,
        )
    headers = {name: value for name, value in response.headers.items() if name not in STALE_HEADERS}
    headers["content-type"] = "text/html; charset=utf-8"
    headers[RENDERED_HEADER] = "chromium"
    return dataclasses.replace(
        response,
        headers=headers,
        body=body,
        content_type="text/html",
        charset="utf-8",
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


async def _unless_gone(render: Coroutine[Any, Any, str], gone: asyncio.Event, url: str) -> str:
    """``render``'s DOM, or :class:`BrowserCrashed` as soon as the browser dies: a page waiting for
    its load state is not always told that its browser is gone."""
    rendering, dying = asyncio.ensure_future(render), asyncio.ensure_future(gone.wait())
    try:
        await asyncio.wait({rendering, dying}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        dying.cancel()
        if not rendering.done():
            rendering.cancel()
    if rendering.done() and not rendering.cancelled() and rendering.exception() is None:
        return rendering.result()
    if gone.is_set():
        raise BrowserCrashed(f"{url}: the browser died during the render; retrying", final_url=url)
    return rendering.result()  # its own error


async def _failure(lease: Lease, url: str, error: PlaywrightError) -> Exception:
    """What a Playwright error means: a page closed under us often reports before the browser's
    death does, so that gets a moment to arrive."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(lease.gone.wait(), DEATH_NOTICE_S)
    browser = lease.context.browser
    if lease.gone.is_set() or browser is None or not browser.is_connected():
        return BrowserCrashed(f"{url}: the browser died during the render ({first}); retrying", final_url=url)
    if isinstance(error, PlaywrightTimeout):
        return FetchTimeout(f"{url}: the browser did not load the page in time ({first})", final_url=url)
    return ConnectionFailed(f"{url}: the browser could not render the page ({first})", final_url=url)
