"""ProxyPool rotation and quarantine (fake clock), and DirectBackend through local HTTP proxies."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.backends.proxies import ProxyPool
from dualplane.control_plane.fetcher.exceptions import ConnectionFailed
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.web.ssrf import SsrfGuard

pytestmark = pytest.mark.unit

A, B, C = "http://p1.example:8080", "http://user:secret@p2.example:8080", "http://p3.example:8080"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_proxies_are_handed_out_in_turn(clock: FakeClock) -> None:
    pool = ProxyPool([A, B, C], clock=clock)
    assert [pool.acquire() for _ in range(7)] == [A, B, C, A, B, C, A]
    assert pool.healthy() == (A, B, C)


@pytest.mark.parametrize(
    "outcome",
    [Outcome.RATE_LIMITED, Outcome.FORBIDDEN, Outcome.BLOCKED_CHALLENGE, Outcome.CONNECTION_ERROR],
)
def test_a_ban_like_outcome_quarantines_the_proxy(clock: FakeClock, outcome: Outcome) -> None:
    pool = ProxyPool([A, B, C], quarantine_s=600, clock=clock)
    pool.report(B, outcome)
    assert pool.healthy() == (A, C)
    assert [pool.acquire() for _ in range(4)] == [A, C, A, C]


@pytest.mark.parametrize(
    "outcome", [Outcome.OK, Outcome.NOT_FOUND, Outcome.TIMEOUT, Outcome.SERVER_ERROR, Outcome.TOO_LARGE]
)
def test_other_outcomes_leave_the_proxy_in_rotation(clock: FakeClock, outcome: Outcome) -> None:
    pool = ProxyPool([A, B], clock=clock)
    pool.report(A, outcome)
    assert pool.healthy() == (A, B)


def test_quarantine_ends_after_quarantine_s(clock: FakeClock) -> None:
    pool = ProxyPool([A, B], quarantine_s=600, clock=clock)
    pool.report(A, Outcome.FORBIDDEN)
    clock.now += 599
    assert pool.healthy() == (B,)
    clock.now += 1
    assert pool.healthy() == (A, B)


def test_none_when_every_proxy_is_quarantined(clock: FakeClock) -> None:
    pool = ProxyPool([A, B], quarantine_s=60, clock=clock)
    pool.report(A, Outcome.BLOCKED_CHALLENGE)
    clock.now += 20
    pool.report(B, Outcome.CONNECTION_ERROR)
    assert pool.acquire() is None
    assert pool.seconds_until_next() == 40
    clock.now += 40
    assert pool.acquire() == A


def test_reports_during_quarantine_neither_extend_it_nor_log_again(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    pool = ProxyPool([A, B], quarantine_s=600, clock=clock)
    with caplog.at_level(logging.INFO, logger="dualplane.control_plane.fetcher.backends.proxies"):
        for _ in range(5):
            pool.report(B, Outcome.RATE_LIMITED)
            clock.now += 100
        clock.now += 100  # 600 s after the first report
        assert pool.healthy() == (A, B)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "secret" not in warnings[0] and "user:***@p2.example" in warnings[0]
    assert any("back from quarantine" in r.getMessage() for r in caplog.records)


def test_invalid_pools_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one proxy"):
        ProxyPool([])
    with pytest.raises(ValueError, match="no duplicates"):
        ProxyPool([A, A])
    with pytest.raises(ValueError, match="not in this pool"):
        ProxyPool([A]).report(B, Outcome.OK)


# --- DirectBackend through forward proxies on loopback ----------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Proxy:
    """A plain-HTTP forward proxy; ``banned`` ones answer 403 like an exit IP the site blocks."""

    banned: bool = False
    seen: list[str] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        target = str(request.url)  # absolute-form request line: the target URL
        self.seen.append(target)
        self.authorizations.append(request.headers.get("Proxy-Authorization"))
        if self.banned:
            return web.Response(status=403, text="Forbidden\n")
        async with httpx.AsyncClient(trust_env=False) as client:
            upstream = await client.get(target)
        return web.Response(status=upstream.status_code, body=upstream.content, content_type="text/html")


async def _page(request: web.Request) -> web.Response:
    return web.Response(text="<html><body>target page</body></html>", content_type="text/html")


@dataclass
class Network:
    target: str
    good: Proxy
    banned: Proxy
    proxy_urls: dict[str, str]


@pytest.fixture
async def network() -> AsyncIterator[Network]:
    target_app = web.Application()
    target_app.router.add_get("/page", _page)
    good, banned = Proxy(), Proxy(banned=True)
    apps = []
    for proxy in (good, banned):
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", proxy.handle)
        apps.append(app)
    with socket.socket() as sock:  # a port where nothing listens: a dead proxy
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with (
        TestServer(target_app, host="127.0.0.1") as target,
        TestServer(apps[0], host="127.0.0.1") as good_server,
        TestServer(apps[1], host="127.0.0.1") as banned_server,
    ):
        urls = {
            "good": f"http://127.0.0.1:{good_server.port}",
            "banned": f"http://127.0.0.1:{banned_server.port}",
            "dead": dead,
        }
        yield Network(str(target.make_url("/page")), good, banned, urls)


def _request(url: str) -> FetchRequest:
    return FetchRequest(url, "dualplane-test/1.0", 2.0, 2.0, max_bytes=1024 * 1024)


@pytest.mark.anyio
async def test_fetches_rotate_through_proxies_and_banned_ones_are_quarantined(network: Network) -> None:
    urls = network.proxy_urls
    pool = ProxyPool([urls["dead"], urls["banned"], urls["good"]])
    async with DirectBackend(SsrfGuard(["127.0.0.1"]), proxies=pool) as backend:
        with pytest.raises(ConnectionFailed):
            await backend.fetch(_request(network.target))  # through the dead proxy
        banned = await backend.fetch(_request(network.target))  # through the banned one
        assert banned.status == 403
        assert pool.healthy() == (urls["good"],)
        for _ in range(3):
            response = await backend.fetch(_request(network.target))
            assert (response.status, response.body) == (200, b"<html><body>target page</body></html>")
    assert network.good.seen == [network.target] * 3
    assert network.banned.seen == [network.target]


@pytest.mark.anyio
async def test_with_every_proxy_quarantined_the_fetch_fails_clearly(network: Network) -> None:
    pool = ProxyPool([network.proxy_urls["banned"]])
    async with DirectBackend(SsrfGuard(["127.0.0.1"]), proxies=pool) as backend:
        await backend.fetch(_request(network.target))
        with pytest.raises(ConnectionFailed, match="all 1 proxies are quarantined"):
            await backend.fetch(_request(network.target))
    assert len(network.banned.seen) == 1


@pytest.mark.anyio
async def test_proxy_credentials_are_sent_to_the_proxy_and_kept_out_of_errors(network: Network) -> None:
    """``http://user:secret@host:port`` authenticates to the proxy (Proxy-Authorization), and a proxy
    that refuses to tunnel HTTPS fails the fetch as 'proxy failed' without the password in it."""
    port = network.proxy_urls["banned"].rsplit(":", 1)[1]
    pool = ProxyPool([f"http://user:secret@127.0.0.1:{port}"], quarantine_s=0)
    async with DirectBackend(SsrfGuard(["127.0.0.1"]), proxies=pool) as backend:
        assert (await backend.fetch(_request(network.target))).status == 403
        with pytest.raises(ConnectionFailed, match=r"proxy failed \(\d{3} ") as failed:
            await backend.fetch(_request("https://93.184.216.34/page"))
    assert network.banned.authorizations == ["Basic dXNlcjpzZWNyZXQ="]  # user:secret; CONNECT got a 404
    assert "secret" not in str(failed.value)
