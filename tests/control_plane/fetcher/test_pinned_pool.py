"""The pinned transport's connection pool over real loopback HTTP: reuse, and a server-closed idle socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from control_plane.fetcher.backends.pinned import pinned_transport
from dualplane.core.web.ssrf import SsrfGuard

pytestmark = [pytest.mark.unit, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def server() -> AsyncIterator[tuple[TestServer, set[int]]]:
    """A server that drops a connection 0.5 s after its first request (keep-alive, then a close the
    client does not hear of until it looks at the socket); the client ports it saw."""
    ports: set[int] = set()

    async def page(request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        port = transport.get_extra_info("peername")[1]
        if port not in ports:
            ports.add(port)
            asyncio.get_running_loop().call_later(0.5, transport.close)
        return web.Response(text="<p>ok</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    try:
        yield test_server, ports
    finally:
        await test_server.close()


async def test_idle_connections_are_reused_and_server_closed_ones_are_replaced(
    server: tuple[TestServer, set[int]],
) -> None:
    test_server, ports = server
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=4, keepalive_expiry=30)
    url = f"http://127.0.0.1:{test_server.port}/"
    async with httpx.AsyncClient(transport=pinned_transport(SsrfGuard(["127.0.0.1"]), limits)) as client:
        for _ in range(3):
            assert (await client.get(url)).status_code == 200
        assert len(ports) == 1, "back-to-back requests must share one kept-alive connection"
        # The server closes the idle connection; the pool must see the socket is closed (readable
        # at EOF) and open a new one rather than write into the dead one.
        await asyncio.sleep(1.0)
        assert (await client.get(url)).status_code == 200
        assert len(ports) == 2
