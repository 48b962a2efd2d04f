"""Direct HTTP fetching with httpx: redirects checked hop by hop, capped bodies, optional proxies.

Settings read by :meth:`DirectBackend.from_settings`: ``DUALPLANE_FETCH_ALLOW_HOSTS`` (the SSRF
allowlist) and ``DUALPLANE_LIMIT_FETCH_CONCURRENCY`` (connection pool size).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import time
from typing import TYPE_CHECKING
from urllib.parse import urldefrag, urljoin

import httpx

from control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from control_plane.fetcher.backends.body import ACCEPT_ENCODING, read_response
from control_plane.fetcher.backends.pinned import pinned_transport
from control_plane.fetcher.backends.proxies import ProxyPool
from control_plane.fetcher.classify import classify
from control_plane.fetcher.exceptions import (
    ConnectionFailed,
    FetchFailed,
    FetchTimeout,
    InvalidTarget,
    SsrfRefused,
)
from dualplane.core.web.exceptions import InvalidUrl, UnsafeUrl
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import domain_of

if TYPE_CHECKING:
    from dualplane.core.settings import Settings

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class DirectBackend(FetchBackend):
    """Fetches over HTTP(S) from this machine, or through a :class:`ProxyPool` when given one.

    Redirects are followed here, not by httpx, so that ``guard`` checks every hop before it is
    requested, and only within the requested URL's site (see :func:`_follows`). With ``proxies``,
    each proxy gets its own client (``max_connections`` each), each fetch takes the next healthy
    proxy, and its outcome is reported back to the pool. Cookies are never stored: fetches are
    independent and memory stays flat over millions of domains. ``transport`` replaces the network
    for direct fetches (tests).
    """

    def __init__(
        self,
        guard: SsrfGuard,
        *,
        max_connections: int = 100,
        proxies: ProxyPool | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._guard = guard
        self._proxies = proxies
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        keys: tuple[str | None, ...] = proxies.proxies if proxies is not None else (None,)
        # Direct connections go only to the address the guard checked (no DNS rebinding window);
        # through a proxy, the proxy resolves and connects.
        direct = transport or pinned_transport(guard, limits)
        self._clients = {key: _client(limits, key, direct) for key in keys}

    @classmethod
    def from_settings(cls, settings: Settings, *, proxies: ProxyPool | None = None) -> DirectBackend:
        return cls(
            SsrfGuard.from_setting(settings.fetch.allow_hosts),
            max_connections=settings.limits.fetch_concurrency,
            proxies=proxies,
        )

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        """See :meth:`FetchBackend.fetch`; proxied fetches also quarantine proxies that look banned."""
        proxy = self._acquire_proxy(request.url)
        try:
            response = await self._fetch_in_time(self._clients[proxy], request)
        except FetchFailed as error:
            self._report(proxy, error)
            raise
        self._report(proxy, response)
        return response

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()

    def _acquire_proxy(self, url: str) -> str | None:
        if self._proxies is None:
            return None
        proxy = self._proxies.acquire()
        if proxy is None:
            wait_s = self._proxies.seconds_until_next()
            raise ConnectionFailed(
                f"no proxy to fetch {url} through: all {len(self._proxies.proxies)} proxies are "
                f"quarantined, the first returns in {wait_s:.0f} s",
                final_url=url,
            )
        return proxy

    def _report(self, proxy: str | None, result: FetchResponse | FetchFailed) -> None:
        if proxy is None or self._proxies is None:
            return
        outcome = result.outcome if isinstance(result, FetchFailed) else classify(result).outcome
        self._proxies.report(proxy, outcome)

    async def _fetch_in_time(self, client: httpx.AsyncClient, request: FetchRequest) -> FetchResponse:
        try:
            async with asyncio.timeout(request.total_timeout_s):
                return await self._follow(client, request)
        except TimeoutError as error:
            raise FetchTimeout(
                f"{request.url}: no complete answer within total_timeout_s={request.total_timeout_s} s",
                final_url=request.url,
            ) from error

    async def _follow(self, client: httpx.AsyncClient, request: FetchRequest) -> FetchResponse:
        started = time.perf_counter()
        url, chain = request.url, list[str]()
        while True:
            await self._check(url, chain)
            try:
                hop = await self._hop(client, request, url, chain, started)
            except httpx.TimeoutException as error:
                raise FetchTimeout(
                    f"{url}: {_kind(error)} after {_limit(error, request)}", final_url=url
                ) from error
            except (httpx.InvalidURL, httpx.UnsupportedProtocol) as error:
                raise InvalidTarget(f"cannot request {url}: {error}", final_url=url) from error
            except UnsafeUrl as error:  # the connection's own check (PinnedNetwork): DNS changed its answer
                raise SsrfRefused(f"{url}: {error}", final_url=url) from error
            except httpx.HTTPError as error:
                raise ConnectionFailed(
                    f"{url}: {_kind(error)} ({str(error) or 'no detail'})", final_url=url
                ) from error
            if isinstance(hop, FetchResponse):
                return hop
            chain.append(url)
            url = hop

    async def _check(self, url: str, chain: list[str]) -> None:
        try:
            await self._guard.check(url)
        except UnsafeUrl as error:
            where = f"redirect from {chain[-1]} to {url} refused: " if chain else ""
            raise SsrfRefused(f"{where}{error}", final_url=url) from error
        except ValueError as error:  # e.g. a port out of range
            raise InvalidTarget(f"cannot request {url}: {error}", final_url=url) from error

    async def _hop(
        self, client: httpx.AsyncClient, request: FetchRequest, url: str, chain: list[str], started: float
    ) -> FetchResponse | str:
        """One request: the next URL when it redirects and we follow, else the final response."""
        http_request = client.build_request("GET", url, headers=_headers(request), timeout=_timeout(request))
        response = await client.send(http_request, stream=True)
        try:
            target = _redirect_target(response, url)
            if target is not None and _follows(request, url, chain, target):
                return target
            return await read_response(
                request,
                response,
                final_url=url,
                status=response.status_code,
                redirect_chain=tuple(chain),
                started=started,
            )
        finally:
            await response.aclose()


def _redirect_target(response: httpx.Response, url: str) -> str | None:
    location = response.headers.get("location")
    if response.status_code not in REDIRECT_STATUSES or not location:
        return None
    target: str = urldefrag(urljoin(url, location.strip())).url
    return target


def _follows(request: FetchRequest, url: str, chain: list[str], target: str) -> bool:
    """Whether to follow a redirect inline: within the cap, not a loop, and to the task's own site.

    A redirect to another site is returned unfollowed, so its target goes to the frontier like any
    link: scoped by the job's rules and fetched under that site's permits and delays. Followed
    inline, a redirect to ``localhost`` (allow-listed for a test site) escaped the job's scope.
    """
    if len(chain) >= request.max_redirects or target in (url, *chain):
        return False
    try:
        return domain_of(target) == domain_of(request.url)
    except InvalidUrl:
        return False  # the frontier rejects it, with the reason counted


def _client(
    limits: httpx.Limits, proxy: str | None, transport: httpx.AsyncBaseTransport | None
) -> httpx.AsyncClient:
    # A policy that allows no domain: cookies are neither stored nor sent back.
    no_cookies = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    return httpx.AsyncClient(
        follow_redirects=False,
        limits=limits,
        proxy=proxy,
        transport=None if proxy else transport,
        cookies=no_cookies,
        trust_env=False,  # proxies and CA come from our settings, not from whoever set HTTP_PROXY
    )


def _headers(request: FetchRequest) -> dict[str, str]:
    accept = ", ".join(kind + "*" if kind.endswith("/") else kind for kind in request.accept_types)
    return {"User-Agent": request.user_agent, "Accept": accept, "Accept-Encoding": ACCEPT_ENCODING}


def _timeout(request: FetchRequest) -> httpx.Timeout:
    # No pool timeout: waiting for a free connection is our own congestion, not the site's fault,
    # and total_timeout_s still bounds it.
    return httpx.Timeout(
        connect=request.connect_timeout_s,
        read=request.read_timeout_s,
        write=request.read_timeout_s,
        pool=None,
    )


def _kind(error: httpx.HTTPError) -> str:
    names: dict[type[httpx.HTTPError], str] = {
        httpx.ConnectTimeout: "connect timeout",
        httpx.ReadTimeout: "read timeout",
        httpx.WriteTimeout: "write timeout",
        httpx.PoolTimeout: "pool timeout",
        httpx.ConnectError: "cannot connect",
        httpx.ProxyError: "proxy failed",
        httpx.RemoteProtocolError: "broken HTTP answer",
        httpx.ReadError: "read failed",
    }
    return names.get(type(error), type(error).__name__)


def _limit(error: httpx.TimeoutException, request: FetchRequest) -> str:
    if isinstance(error, httpx.ConnectTimeout):
        return f"connect_timeout_s={request.connect_timeout_s}"
    return f"read_timeout_s={request.read_timeout_s}"
