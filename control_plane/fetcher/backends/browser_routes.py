"""What a rendering browser may load: every request intercepted, fetched through the guard or refused.

The browser itself reaches nothing (see :mod:`.browser_pool`): :class:`Router` answers each of its
requests. The page's own navigation gets the answer the direct backend already fetched; every other
request (scripts, stylesheets, XHR and ``fetch()``, frames) is fetched by the direct backend, so it
passes the same SSRF guard and pinned resolution, hop by hop, as a page does, and is refused when
the guard refuses it. Refused outright: images, media and fonts (no text comes from them, and they
are most of a page's bytes), methods other than GET and HEAD (our client sends no request bodies),
a second top-level navigation (a script or a meta refresh leaving the page: the page fetched is
the page rendered), anything past ``max_subrequests``, and every WebSocket.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request, Route, WebSocketRoute

from dualplane.control_plane.fetcher.backends.base import FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.exceptions import FetchFailed, SsrfRefused
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of

log = logging.getLogger(__name__)

Wait = Literal["load", "networkidle"]
SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
SUBRESOURCE_TYPES = ("text/", "application/", "image/svg")
# Not handed to the browser: they describe the transfer, which the direct backend already undid.
TRANSFER_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"}
)


@dataclass(frozen=True)
class RenderOptions:
    """How a page is rendered.

    ``wait``: the load state to wait for after the DOM is built (``load``: scripts and stylesheets
    loaded; ``networkidle``: no request for 500 ms, for pages that fetch their data after load);
    ``selector``: a CSS selector to wait for as well; ``wait_s``: the most each wait may take,
    after which the DOM is taken as it stands. ``max_subrequests`` bounds what one page may load.
    """

    wait: Wait = "load"
    selector: str | None = None
    wait_s: float = 10.0
    max_subrequests: int = 200

    def __post_init__(self) -> None:
        if self.wait not in ("load", "networkidle") or not self.wait_s > 0 or self.max_subrequests < 0:
            raise ValueError(
                f"render options out of range: wait={self.wait!r} (load or networkidle), "
                f"wait_s={self.wait_s} (> 0), max_subrequests={self.max_subrequests} (>= 0)"
            )


class Router:
    """Answers the requests of one render of ``document`` (the direct backend's answer to ``request``)."""

    def __init__(
        self, direct: DirectBackend, request: FetchRequest, document: FetchResponse, options: RenderOptions
    ) -> None:
        self.direct = direct
        self.request = request
        self.document = document
        self.options = options
        self.served_document = False
        self.fetched = 0
        self.refused: Counter[str] = Counter()  # why -> how many

    async def handle(self, route: Route) -> None:
        """Playwright's route handler: never raises (an error here would leave the request hanging)."""
        with contextlib.suppress(PlaywrightError):  # the page or its browser went away meanwhile
            await self._answer(route, route.request)

    def report(self) -> None:
        if self.refused:
            reasons = ", ".join(f"{count} {why}" for why, count in self.refused.most_common())
            log.debug("rendering %s: refused %s", self.document.final_url, reasons)

    async def _answer(self, route: Route, request: Request) -> None:
        if _top_level_navigation(request) and not self.served_document:
            self.served_document = True
            await _fulfill(route, self.document)
            return
        why = self._refusal(request)
        if why is not None:
            await self._refuse(route, why)
            return
        self.fetched += 1
        try:
            answer = await self.direct.fetch(self._subrequest(request.url))
        except SsrfRefused as refused:
            log.debug("rendering %s: %s", self.document.final_url, refused)
            await self._refuse(route, "by the SSRF guard", error="addressunreachable")
        except FetchFailed as failure:
            log.debug("rendering %s: %s", self.document.final_url, failure)
            await self._refuse(route, f"failed fetches ({failure.outcome})", error="failed")
        else:
            await _fulfill(route, answer)

    def _refusal(self, request: Request) -> str | None:
        """Why ``request`` is refused without a fetch; None when it is fetched through the guard."""
        if _top_level_navigation(request):
            return "navigations away"
        if request.resource_type in SKIPPED_RESOURCES:
            return "images, media or fonts"
        if request.method not in ("GET", "HEAD"):
            return f"{request.method} requests"
        if self.fetched >= self.options.max_subrequests:
            return "requests over max_subrequests"
        return None

    def _subrequest(self, url: str) -> FetchRequest:
        # A profile's headers (a region cookie, a token) are for its own domain, never a third party's.
        headers = self.request.headers if _same_domain(url, self.request.url) else {}
        return dataclasses.replace(
            self.request, url=url, accept_types=SUBRESOURCE_TYPES, conditional_headers={}, headers=headers
        )

    async def _refuse(self, route: Route, why: str, *, error: str = "blockedbyclient") -> None:
        self.refused[why] += 1
        await route.abort(error)


def refuse_socket(socket: WebSocketRoute) -> None:
    """A WebSocket handler that never connects it to a server: the page's socket stays unanswered."""


def _same_domain(url: str, other: str) -> bool:
    try:
        return domain_of(url) == domain_of(other)
    except InvalidUrl:
        return False


def _top_level_navigation(request: Request) -> bool:
    return request.is_navigation_request() and request.frame.parent_frame is None


async def _fulfill(route: Route, answer: FetchResponse) -> None:
    await route.fulfill(status=answer.status, headers=_browser_headers(answer.headers), body=answer.body)


def _browser_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name not in TRANSFER_HEADERS}
