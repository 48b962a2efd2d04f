"""The direct backend's pinned connection pool over real loopback HTTP: keep-alive reuse, a
server-closed idle connection replaced, at most ``max_connections`` open, one loop only."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.core.web.pinned import pinned_connector
from dualplane.core.web.ssrf import SsrfGuard
from tests.control_plane.fetcher.test_direct_backend import fetch_request

pytestmark = [pytest.mark.unit, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Server:
    """Client ports seen and most requests in progress at once. With ``?drop``, the server closes a
    connection 0.5 s after its first request (keep-alive, then a close the client hears of only as
    the socket's end); ``?s=`` is how long it takes to answer."""

    url: str
    ports: set[int] = field(default_factory=set)
    open_now: int = 0
    most_open: int = 0


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    seen = Server("")

    async def page(request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        port = transport.get_extra_info("peername")[1]
        if port not in seen.ports:
            seen.ports.add(port)
            if "drop" in request.query:
                asyncio.get_running_loop().call_later(0.5, transport.close)
        seen.open_now += 1
        seen.most_open = max(seen.most_open, seen.open_now)
        await asyncio.sleep(float(request.query.get("s", "0")))
        seen.open_now -= 1
        return web.Response(text="<p>ok</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    async with TestServer(app, host="127.0.0.1") as running:
        seen.url = f"http://127.0.0.1:{running.port}/"
        yield seen


async def test_idle_connections_are_reused_and_server_closed_ones_are_replaced(server: Server) -> None:
    async with DirectBackend(SsrfGuard(["127.0.0.1"]), max_connections=4) as backend:
        for _ in range(3):
            assert (await backend.fetch(fetch_request(server.url + "?drop"))).status == 200
        assert len(server.ports) == 1, "back-to-back fetches must share one kept-alive connection"
        # The server closes the idle connection; the pool must see it closed and open a new one
        # rather than write into the dead one (which would fail the fetch).
        await asyncio.sleep(1.0)
        assert (await backend.fetch(fetch_request(server.url + "?drop"))).status == 200
        assert len(server.ports) == 2


async def test_no_more_than_max_connections_are_open_at_once(server: Server) -> None:
    async with DirectBackend(SsrfGuard(["127.0.0.1"]), max_connections=2) as backend:
        fetches = [backend.fetch(fetch_request(server.url + "?s=0.2")) for _ in range(6)]
        assert [response.status for response in await asyncio.gather(*fetches)] == [200] * 6
    assert server.most_open == 2
    assert len(server.ports) == 2


@pytest.fixture
async def keep_alive_sites() -> AsyncIterator[tuple[list[str], list[int]]]:
    """Three raw keep-alive servers: their URLs, and how many connections each has open now."""
    open_now = [0, 0, 0]

    def serving(index: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            open_now[index] += 1
            try:
                while await reader.readline():
                    while (await reader.readline()) not in (b"\r\n", b""):
                        pass
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok")
                    await writer.drain()
            finally:
                open_now[index] -= 1
                writer.close()

        return serve

    servers = [await asyncio.start_server(serving(index), "127.0.0.1", 0) for index in range(3)]
    try:
        yield [f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/" for server in servers], open_now
    finally:
        for server in servers:
            server.close()


async def test_idle_connections_are_no_more_than_max_connections(
    keep_alive_sites: tuple[list[str], list[int]],
) -> None:
    """aiohttp's own limit counts connections in use only: idle ones to the sites fetched before
    are capped too, so a crawl over many sites holds at most twice max_connections sockets."""
    urls, open_now = keep_alive_sites
    async with DirectBackend(SsrfGuard(["127.0.0.1"]), max_connections=1) as backend:
        for url in urls:
            assert (await backend.fetch(fetch_request(url))).status == 200
            await asyncio.sleep(0.1)  # for the server to see a closed connection's end
        assert open_now == [0, 1, 1]  # the longest idle closed for the third site
        await backend.fetch(fetch_request(urls[2]))
        await asyncio.sleep(0.1)
        assert open_now == [0, 1, 1]  # reused, nothing closed


async def test_the_connector_seam_builds_the_direct_pool(server: Server) -> None:
    built: list[int] = []

    def connector() -> aiohttp.BaseConnector:
        built.append(1)
        return pinned_connector(SsrfGuard(["127.0.0.1"]), max_connections=1)

    async with DirectBackend(SsrfGuard(["127.0.0.1"]), connector=connector) as backend:
        assert built == []  # nothing before the first fetch: sessions belong to the loop that fetches
        fetches = [backend.fetch(fetch_request(server.url + "?s=0.1")) for _ in range(3)]
        await asyncio.gather(*fetches)
    assert (built, server.most_open) == ([1], 1)


def test_a_backend_made_off_the_loop_fetches_on_the_loop_thread_and_only_there(server_url: str) -> None:
    """As the fetcher runs it: built on the main thread, used on its own event loop's thread."""
    backend = DirectBackend(SsrfGuard(["127.0.0.1"]))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        fetched = asyncio.run_coroutine_threadsafe(backend.fetch(fetch_request(server_url)), loop)
        assert fetched.result(timeout=10).status == 200
        with pytest.raises(RuntimeError, match="serves one event loop only"):
            asyncio.run(backend.fetch(fetch_request(server_url)))
        asyncio.run_coroutine_threadsafe(backend.aclose(), loop).result(timeout=10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@pytest.fixture
def server_url() -> Iterator[str]:
    """A server on a thread of its own, for a test that has no event loop of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    app = web.Application()
    app.router.add_get("/", _ok)
    runner = web.AppRunner(app)
    asyncio.run_coroutine_threadsafe(runner.setup(), loop).result(timeout=10)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    asyncio.run_coroutine_threadsafe(site.start(), loop).result(timeout=10)
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="<p>ok</p>", content_type="text/html")
