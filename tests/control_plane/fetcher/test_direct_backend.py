"""DirectBackend over real HTTP on loopback: redirects, SSRF, size cap, content types, encodings."""

from __future__ import annotations

import asyncio
import functools
import gzip
import re
import socket
import tracemalloc
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from aiohttp.typedefs import Handler

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.classify import classify
from dualplane.control_plane.fetcher.exceptions import (
    ConnectionFailed,
    FetchTimeout,
    InvalidTarget,
    SsrfRefused,
    TooLarge,
    UndecodableBody,
    UnwantedContent,
)
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.web.ssrf import SsrfGuard

pytestmark = [pytest.mark.unit, pytest.mark.anyio]

MiB = 1024 * 1024
PAGE = "<html><head><title>Hello</title></head><body><p>Grüße from the test server</p></body></html>"
CHUNK = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@functools.cache
def gzip_bomb() -> bytes:
    """16 MiB of zeros, about 70 KiB on the wire."""
    return gzip.compress(b"\0" * (16 * MiB), compresslevel=1)


@dataclass
class Recorder:
    """What the server saw: requests per path and bytes it managed to send per path."""

    hits: Counter[str] = field(default_factory=Counter)
    sent: Counter[str] = field(default_factory=Counter)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)


RECORDER = web.AppKey("recorder", Recorder)


async def page(request: web.Request) -> web.Response:
    return web.Response(text=PAGE, content_type="text/html")


async def redirect_n(request: web.Request) -> web.Response:
    left = int(request.match_info["n"])
    raise web.HTTPFound(str(left - 1) if left > 0 else "/page")  # relative Location


async def relative(request: web.Request) -> web.Response:
    raise web.HTTPMovedPermanently("../../page?x=1#top")


async def to(request: web.Request) -> web.Response:
    targets = {
        "loopback": f"http://127.0.0.1:{request.url.port}/page",
        "metadata": "http://169.254.169.254/latest/meta-data/",
        "file": "file:///etc/passwd",
        "loop-a": "/to/loop-b",
        "loop-b": "/to/loop-a",
    }
    raise web.HTTPFound(targets[request.match_info["where"]])


async def stream(request: web.Request) -> web.StreamResponse:
    """``/stream/{kind}/{mib}``: ``mib`` MiB of ``kind`` (html or png), chunked, counted."""
    kind = {"html": "text/html", "png": "image/png"}[request.match_info["kind"]]
    response = web.StreamResponse(headers={"Content-Type": kind})
    await response.prepare(request)
    try:
        for _ in range(int(request.match_info["mib"]) * 16):
            await response.write(CHUNK)
            request.app[RECORDER].sent[request.path] += len(CHUNK)
    except (ConnectionResetError, RuntimeError):
        pass  # the client hung up, as it should
    return response


async def declared(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/html", "Content-Length": str(100 * MiB)})
    await response.prepare(request)
    return response  # never sends the body: the client must refuse from the headers


async def encoded(request: web.Request) -> web.Response:
    raw = PAGE.encode()
    bodies: dict[str, Callable[[], bytes]] = {
        "gzip": lambda: gzip.compress(raw),
        "deflate": lambda: zlib.compress(raw),
        "raw-deflate": lambda: zlib.compress(raw)[2:-4],
        "br": lambda: b"\x0b\x02\x80hello\x03",
        "corrupt": lambda: b"\x1f\x8b\x08\x00garbage-not-gzip",
        "bomb": gzip_bomb,
    }
    body = bodies[request.match_info["encoding"]]()
    encoding = {"raw-deflate": "deflate", "bomb": "gzip", "corrupt": "gzip"}.get(
        request.match_info["encoding"], request.match_info["encoding"]
    )
    return web.Response(body=body, headers={"Content-Type": "text/html", "Content-Encoding": encoding})


async def charset(request: web.Request) -> web.Response:
    kind = request.match_info["kind"]
    if kind == "header":  # header says latin-1, meta says utf-8: the header wins
        body = '<meta charset="utf-8"><p>café</p>'.encode("latin-1")
        return web.Response(body=body, headers={"Content-Type": "text/html; charset=ISO-8859-1"})
    body = '<html><head><meta charset="shift_jis"></head><p>日本</p>'.encode("shift_jis")
    return web.Response(body=body, headers={"Content-Type": "text/html"})


async def status(request: web.Request) -> web.Response:
    code = int(request.match_info["code"])
    if request.query.get("type") == "png":
        return web.Response(status=code, body=b"\x89PNG" * 1000, content_type="image/png")
    return web.Response(
        status=code, text=PAGE * int(request.query.get("repeat", "1")), content_type="text/html"
    )


async def slow(request: web.Request) -> web.Response:
    await asyncio.sleep(float(request.query.get("s", "2")))
    return web.Response(text=PAGE, content_type="text/html")


async def drip(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/html"})
    await response.prepare(request)
    try:
        for _ in range(100):
            await response.write(b"<")
            await asyncio.sleep(0.05)
    except (ConnectionResetError, RuntimeError):
        pass
    return response


async def set_cookie(request: web.Request) -> web.Response:
    response = web.Response(text=PAGE, content_type="text/html")
    response.set_cookie("session", "abc123")
    return response


async def echo(request: web.Request) -> web.Response:
    return web.Response(text=PAGE, content_type="text/html")


@web.middleware
async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
    request.app[RECORDER].hits[request.path] += 1
    request.app[RECORDER].headers[request.path] = dict(request.headers)
    return await handler(request)


def make_app(recorder: Recorder) -> web.Application:
    app = web.Application(middlewares=[record])
    app[RECORDER] = recorder
    app.router.add_get("/page", page)
    app.router.add_get("/redirect/{n}", redirect_n)
    app.router.add_get("/a/b/relative", relative)
    app.router.add_get("/to/{where}", to)
    app.router.add_get("/stream/{kind}/{mib}", stream)
    app.router.add_get("/declared", declared)
    app.router.add_get("/encoded/{encoding}", encoded)
    app.router.add_get("/charset/{kind}", charset)
    app.router.add_get("/status/{code}", status)
    app.router.add_get("/slow", slow)
    app.router.add_get("/drip", drip)
    app.router.add_get("/set-cookie", set_cookie)
    app.router.add_get("/echo", echo)
    return app


@dataclass
class Site:
    base: str
    port: int
    recorder: Recorder

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    recorder = Recorder()
    async with TestServer(make_app(recorder), host="127.0.0.1") as server:
        assert server.port is not None
        yield Site(str(server.make_url("")), server.port, recorder)


@pytest.fixture
async def backend() -> AsyncIterator[DirectBackend]:
    async with DirectBackend(SsrfGuard(["127.0.0.1"])) as direct:
        yield direct


def fetch_request(url: str, **overrides: object) -> FetchRequest:
    options: dict[str, object] = {"connect_timeout_s": 2.0, "read_timeout_s": 2.0, "max_bytes": MiB}
    options.update(overrides)
    return FetchRequest(url, "dualplane-test/1.0 (+https://example.invalid)", **options)  # type: ignore[arg-type]


# --- plain fetches ----------------------------------------------------------------------------


async def test_a_page_is_fetched_with_metadata(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/page")))
    assert (response.status, response.final_url, response.redirect_chain) == (200, site.url("/page"), ())
    assert response.body == PAGE.encode()
    assert (response.content_type, response.charset, response.truncated) == ("text/html", "utf-8", False)
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.elapsed_ms > 0
    sent = site.recorder.headers["/page"]
    assert sent["User-Agent"].startswith("dualplane-test/1.0")
    assert sent["Accept-Encoding"] == "gzip, deflate"
    assert "text/html" in sent["Accept"]


async def test_a_404_is_a_response_not_an_error(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/status/404")))
    assert response.status == 404
    assert response.body == PAGE.encode()
    assert classify(response).outcome is Outcome.NOT_FOUND


async def test_an_error_page_of_an_unwanted_type_keeps_its_status_without_a_body(
    site: Site, backend: DirectBackend
) -> None:
    response = await backend.fetch(fetch_request(site.url("/status/503?type=png")))
    assert (response.status, response.body, response.content_type) == (503, b"", "image/png")


async def test_a_large_error_page_is_cut_not_refused(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/status/500?repeat=50"), max_bytes=1024))
    assert (response.status, len(response.body), response.truncated) == (500, 1024, True)
    assert classify(response).outcome is Outcome.SERVER_ERROR


async def test_cookies_are_not_kept_between_fetches(site: Site, backend: DirectBackend) -> None:
    await backend.fetch(fetch_request(site.url("/set-cookie")))
    await backend.fetch(fetch_request(site.url("/echo")))
    assert "Cookie" not in site.recorder.headers["/echo"]


# --- redirects --------------------------------------------------------------------------------


async def test_redirect_chain_is_followed_and_recorded(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/redirect/2")))
    assert response.status == 200
    assert response.final_url == site.url("/page")
    assert response.redirect_chain == tuple(site.url(f"/redirect/{n}") for n in (2, 1, 0))
    assert response.url == site.url("/redirect/2")


async def test_redirects_beyond_the_cap_are_returned_unfollowed(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/redirect/5"), max_redirects=2))
    assert response.status == 302
    assert response.redirect_chain == (site.url("/redirect/5"), site.url("/redirect/4"))
    assert response.final_url == site.url("/redirect/3")
    assert (response.headers["location"], response.body) == ("2", b"")
    assert classify(response).outcome is Outcome.REDIRECT
    assert site.recorder.hits["/redirect/2"] == 0


async def test_relative_redirect_is_resolved_and_its_fragment_dropped(
    site: Site, backend: DirectBackend
) -> None:
    response = await backend.fetch(fetch_request(site.url("/a/b/relative")))
    assert (response.status, response.final_url) == (200, site.url("/page?x=1"))


async def test_a_redirect_loop_stops_at_the_repeat(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/to/loop-a")))
    assert response.status == 302
    assert response.redirect_chain == (site.url("/to/loop-a"),)
    assert response.final_url == site.url("/to/loop-b")


# --- SSRF -------------------------------------------------------------------------------------


async def test_loopback_is_refused_without_the_allowlist(site: Site) -> None:
    async with DirectBackend(SsrfGuard()) as strict:
        with pytest.raises(SsrfRefused, match="loopback"):
            await strict.fetch(fetch_request(site.url("/page")))
    assert site.recorder.hits["/page"] == 0


async def test_the_metadata_address_is_refused(backend: DirectBackend) -> None:
    with pytest.raises(SsrfRefused, match="metadata"):
        await backend.fetch(fetch_request("http://169.254.169.254/latest/meta-data/"))


@pytest.mark.parametrize("url", ["ftp://example.com/file", "file:///etc/passwd", "gopher://example.com/"])
async def test_non_http_schemes_are_refused(backend: DirectBackend, url: str) -> None:
    with pytest.raises(SsrfRefused, match="scheme"):
        await backend.fetch(fetch_request(url))


@pytest.mark.parametrize("where", ["loopback", "metadata", "file"])
async def test_a_redirect_to_another_site_is_returned_not_followed(site: Site, where: str) -> None:
    """Followed inline, a redirect escaped the job's scope (a probe's finding: to ``localhost``);
    returned, its target goes to the frontier, which scopes it and checks it like any link."""
    async with DirectBackend(SsrfGuard(["localhost", "127.0.0.1"])) as backend:
        response = await backend.fetch(fetch_request(site.url(f"/to/{where}", host="localhost")))
    assert (response.status, response.redirect_chain) == (302, ())
    assert response.final_url == site.url(f"/to/{where}", host="localhost")
    assert classify(response).outcome is Outcome.REDIRECT
    assert site.recorder.hits["/page"] == 0


# --- size cap and content types ---------------------------------------------------------------


async def test_a_huge_body_is_refused_without_reading_it_all(site: Site, backend: DirectBackend) -> None:
    with pytest.raises(TooLarge, match="larger than the page limit of 1048576 bytes") as refused:
        await backend.fetch(fetch_request(site.url("/stream/html/256")))
    assert refused.value.outcome is Outcome.TOO_LARGE
    await asyncio.sleep(0.2)  # let the server notice the hang-up
    assert site.recorder.sent["/stream/html/256"] < 64 * MiB  # of 256 MiB


async def test_a_declared_length_over_the_cap_is_refused_from_the_headers(
    site: Site, backend: DirectBackend
) -> None:
    with pytest.raises(TooLarge, match="Content-Length 104857600"):
        await backend.fetch(fetch_request(site.url("/declared")))


async def test_a_gzip_bomb_is_stopped_at_the_cap_without_inflating_it(
    site: Site, backend: DirectBackend
) -> None:
    gzip_bomb()  # built before tracing: the server shares this process
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge):
            await backend.fetch(fetch_request(site.url("/encoded/bomb")))
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_bytes < 4 * MiB  # the cap is 1 MiB; inflating it all would take 16 MiB


async def test_an_unwanted_content_type_is_refused_before_the_body(
    site: Site, backend: DirectBackend
) -> None:
    with pytest.raises(UnwantedContent, match="image/png") as refused:
        await backend.fetch(fetch_request(site.url("/stream/png/256"), max_bytes=512 * MiB))
    assert refused.value.outcome is Outcome.INVALID_CONTENT
    await asyncio.sleep(0.2)
    assert site.recorder.sent["/stream/png/256"] < 64 * MiB


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
async def test_compressed_bodies_are_decoded(site: Site, backend: DirectBackend, encoding: str) -> None:
    response = await backend.fetch(fetch_request(site.url(f"/encoded/{encoding}")))
    assert response.body == PAGE.encode()


@pytest.mark.parametrize(
    ("encoding", "match"), [("br", "'br', which we do not decode"), ("corrupt", "corrupt gzip")]
)
async def test_unsupported_or_corrupt_encodings_are_refused(
    site: Site, backend: DirectBackend, encoding: str, match: str
) -> None:
    with pytest.raises(UndecodableBody, match=match):
        await backend.fetch(fetch_request(site.url(f"/encoded/{encoding}")))


async def test_charset_from_the_header_beats_the_meta_tag(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/charset/header")))
    assert response.charset == "cp1252"
    assert "café" in response.body.decode(response.charset)


async def test_charset_from_the_meta_tag_without_a_header_charset(site: Site, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(site.url("/charset/meta")))
    assert response.charset == "cp932"
    assert "日本" in response.body.decode(response.charset)


# --- timeouts and connection errors ------------------------------------------------------------


async def test_a_slow_server_times_out(site: Site, backend: DirectBackend) -> None:
    with pytest.raises(FetchTimeout, match=re.escape("read timeout after read_timeout_s=0.2")) as timed_out:
        await backend.fetch(fetch_request(site.url("/slow?s=2"), read_timeout_s=0.2))
    assert site.url("/slow") in str(timed_out.value)
    assert timed_out.value.outcome is Outcome.TIMEOUT


async def test_a_dripping_server_hits_the_total_timeout(site: Site, backend: DirectBackend) -> None:
    with pytest.raises(FetchTimeout, match=re.escape("total_timeout_s=0.3")):
        await backend.fetch(fetch_request(site.url("/drip"), read_timeout_s=1.0, total_timeout_s=0.3))


async def test_a_refused_connection_is_connection_failed(backend: DirectBackend) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/page"
    with pytest.raises(ConnectionFailed, match=f"{url}: cannot connect") as failed:
        await backend.fetch(fetch_request(url))
    assert failed.value.outcome is Outcome.CONNECTION_ERROR


async def test_a_malformed_url_is_an_invalid_target(backend: DirectBackend) -> None:
    with pytest.raises(InvalidTarget, match=re.escape("cannot request http://127.0.0.1:99999/")) as invalid:
        await backend.fetch(fetch_request("http://127.0.0.1:99999/"))
    assert invalid.value.outcome is Outcome.INVALID_CONTENT
