"""BrowserBackend with Debian's chromium over real HTTP: rendering, the SSRF guard on every request, crashes.

The page's host is ``shop.test``, resolved to 127.0.0.1 by the guard's resolver and allowed by name,
so that 127.0.0.1 itself (any other port) stays refused, as on a real fetcher. Listeners on
127.0.0.1 and on 169.254.169.254 (added to ``lo`` for the test when we may) count the connections
that reach them: every trick a page has to load from them must make none.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from dualplane.control_plane.fetcher.backends.base import RENDERED_HEADER, FetchRequest
from dualplane.control_plane.fetcher.backends.browser import BrowserBackend
from dualplane.control_plane.fetcher.backends.browser_pool import BrowserPool, PoolLimits
from dualplane.control_plane.fetcher.backends.browser_routes import RenderOptions
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.exceptions import BrowserCrashed
from dualplane.control_plane.fetcher.retry_policy import RULES
from dualplane.core.web.ssrf import SsrfGuard, _resolve

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.anyio]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
METADATA = "169.254.169.254"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Listener:
    """A TCP listener that only counts the connections made to it."""

    def __init__(self, host: str, port: int = 0) -> None:
        self.accepted = 0
        self.socket = socket.create_server((host, port), reuse_port=False)
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def loopback_listener() -> Iterator[Listener]:
    listener = Listener("127.0.0.1")
    yield listener
    listener.close()


@pytest.fixture
def metadata_listener() -> Iterator[Listener | None]:
    """A listener on 169.254.169.254:80 when this process may add the address to ``lo`` (root)."""
    added = os.geteuid() == 0 and shutil.which("ip") is not None and _ip("add") == 0
    try:
        listener = Listener(METADATA, 80)
    except OSError:
        listener = None
    yield listener
    if listener is not None:
        listener.close()
    if added:
        _ip("del")


def _ip(action: str) -> int:
    command = ["ip", "addr", action, f"{METADATA}/32", "dev", "lo"]
    return subprocess.run(command, capture_output=True, check=False).returncode


def shop_page(trap_port: int, cdn: str) -> str:
    local = f"http://127.0.0.1:{trap_port}"
    return f"""<!doctype html><html><head><title>Lamp</title>
<link rel="preconnect" href="{local}/"><link rel="dns-prefetch" href="{local}/">
<link rel="stylesheet" href="{local}/steal.css"><link rel="prefetch" href="http://{METADATA}/p">
<script src="/redirect-to-loopback.js"></script><script src="{cdn}/lib.js"></script><script src="file:///etc/passwd"></script>
</head><body><h1>Lamp</h1><p>Price: <span class="price">loading</span></p>
<img src="{local}/pixel.png"><iframe src="http://{METADATA}/latest/meta-data/"></iframe>
<script>
fetch("/api/price.json").then(r => r.json()).then(d => {{
  document.querySelector(".price").textContent = d.price; document.body.dataset.done = "1"; }});
fetch("http://{METADATA}/latest/meta-data/").catch(() => {{}});
fetch("{local}/xhr").catch(() => {{}});
try {{ new WebSocket("ws://127.0.0.1:{trap_port}/ws"); }} catch (e) {{}}
try {{ navigator.sendBeacon("{local}/beacon", "x"); }} catch (e) {{}}
</script></body></html>"""


def shop_app(
    trap_port: int,
    slow_s: float = 0.0,
    asked: asyncio.Event | None = None,
    cookies: dict[str, str | None] | None = None,
) -> web.Application:
    """``/lamp`` and what it loads; ``cookies`` gets the Cookie header each path came with."""
    seen = cookies if cookies is not None else {}

    async def page(request: web.Request) -> web.Response:
        seen[request.path] = request.headers.get("Cookie")
        cdn = f"http://cdn.test:{request.url.port}"
        return web.Response(text=shop_page(trap_port, cdn), content_type="text/html")

    async def library(request: web.Request) -> web.Response:
        seen[request.path] = request.headers.get("Cookie")
        return web.Response(text="window.lib = 1;", content_type="text/javascript")

    async def price(request: web.Request) -> web.Response:
        seen[request.path] = request.headers.get("Cookie")
        if asked is not None:
            asked.set()
        await asyncio.sleep(slow_s)
        return web.json_response({"price": "€12.50"})

    async def to_loopback(_request: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://127.0.0.1:{trap_port}/evil.js")

    app = web.Application()
    app.router.add_get("/lamp", page)
    app.router.add_get("/api/price.json", price)
    app.router.add_get("/lib.js", library)
    app.router.add_get("/redirect-to-loopback.js", to_loopback)
    return app


def guard() -> SsrfGuard:
    loopback = ipaddress.ip_address("127.0.0.1")
    ours = ("shop.test", "cdn.test")
    return SsrfGuard(ours, resolve=lambda host, port: [loopback] if host in ours else _resolve(host, port))


def request(url: str, headers: dict[str, str] | None = None) -> FetchRequest:
    return FetchRequest(
        url=url,
        user_agent="dualplane-test",
        connect_timeout_s=5,
        read_timeout_s=10,
        max_bytes=2**20,
        headers=headers or {},
    )


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[BrowserBackend]:
    pool = BrowserPool(CHROMIUM, PoolLimits(max_contexts=2), marker=tmp_path.name)
    options = RenderOptions(wait="load", selector="body[data-done]", wait_s=10)
    async with BrowserBackend(DirectBackend(guard()), pool, options) as rendering:
        yield rendering


async def test_rendered_dom_comes_back_and_no_request_reaches_a_refused_address(
    backend: BrowserBackend, loopback_listener: Listener, metadata_listener: Listener | None
) -> None:
    cookies: dict[str, str | None] = {}
    server = TestServer(shop_app(loopback_listener.port, cookies=cookies), host="127.0.0.1")
    await server.start_server()
    try:
        response = await backend.fetch(
            request(f"http://shop.test:{server.port}/lamp", {"Cookie": "region=de"})
        )
    finally:
        await server.close()

    assert response.status == 200 and response.headers[RENDERED_HEADER] == "chromium"
    assert response.content_type == "text/html" and response.charset == "utf-8"
    assert '<span class="price">€12.50</span>' in response.body.decode()
    await asyncio.sleep(1)  # anything still on its way would have arrived by now
    assert loopback_listener.accepted == 0
    assert metadata_listener is not None or os.geteuid() != 0, (
        "as root the test listens on the metadata address"
    )
    if metadata_listener is not None:
        assert metadata_listener.accepted == 0
    # A profile's headers go to its own domain's requests, never to another domain's (cdn.test).
    assert cookies == {"/lamp": "region=de", "/api/price.json": "region=de", "/lib.js": None}


async def test_a_browser_killed_mid_render_fails_the_fetch_for_a_retry_and_the_pool_recovers(
    tmp_path: Path, loopback_listener: Listener
) -> None:
    asked = asyncio.Event()
    server = TestServer(shop_app(loopback_listener.port, slow_s=4, asked=asked), host="127.0.0.1")
    await server.start_server()
    pool = BrowserPool(CHROMIUM, PoolLimits(max_contexts=2), marker=tmp_path.name)
    options = RenderOptions(wait="networkidle", wait_s=10)
    url = f"http://shop.test:{server.port}/lamp"
    try:
        async with BrowserBackend(DirectBackend(guard()), pool, options) as backend:
            rendering = asyncio.create_task(backend.fetch(request(url)))
            await asyncio.wait_for(asked.wait(), 60)  # the page is rendering, waiting for its price
            killed = kill_browsers(tmp_path.name)
            with pytest.raises(BrowserCrashed) as crashed:
                await rendering
            again = await backend.fetch(request(url))
    finally:
        await server.close()

    assert killed >= 1
    assert RULES[crashed.value.outcome].retry  # the runner retries the task: nothing is lost
    assert '<span class="price">€12.50</span>' in again.body.decode()
    assert pool.launches == 2


def kill_browsers(marker: str) -> int:
    """SIGKILL the main process of every browser launched with ``--dualplane-pool=marker``."""
    killed = 0
    for proc in Path("/proc").iterdir():
        try:
            arguments = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"--dualplane-pool={marker}".encode() in arguments and not any(
            a.startswith(b"--type=") for a in arguments
        ):
            os.kill(int(proc.name), signal.SIGKILL)
            killed += 1
    return killed


async def test_a_browser_idle_for_idle_close_s_is_closed_and_the_next_render_launches_one(
    tmp_path: Path, loopback_listener: Listener
) -> None:
    server = TestServer(shop_app(loopback_listener.port), host="127.0.0.1")
    await server.start_server()
    pool = BrowserPool(CHROMIUM, PoolLimits(idle_close_s=1.0), marker=tmp_path.name)
    url = f"http://shop.test:{server.port}/lamp"
    try:
        async with BrowserBackend(DirectBackend(guard()), pool, RenderOptions(wait_s=10)) as backend:
            await backend.fetch(request(url))
            alive = running_browsers(tmp_path.name)
            closed = await wait_until(lambda: running_browsers(tmp_path.name) == 0, timeout_s=30)
            again = await backend.fetch(request(url))
    finally:
        await server.close()

    assert alive == 1 and closed
    assert '<span class="price">€12.50</span>' in again.body.decode() and pool.launches == 2


def running_browsers(marker: str) -> int:
    count = 0
    for proc in Path("/proc").iterdir():
        try:
            arguments = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if f"--dualplane-pool={marker}".encode() in arguments and state != "Z":
            count += not any(a.startswith(b"--type=") for a in arguments)
    return count


async def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True
