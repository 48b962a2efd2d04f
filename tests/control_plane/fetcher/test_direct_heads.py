"""DirectBackend on hand-written HTTP answers from a raw socket server: headers exactly as httpx
gave them, the request line as httpx wrote it, and every malformed head or body a ConnectionFailed
(never a crash of the worker)."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest

from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.exceptions import ConnectionFailed, FetchTimeout, InvalidTarget
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.web.ssrf import SsrfGuard
from tests.control_plane.fetcher.test_direct_backend import fetch_request

pytestmark = [pytest.mark.unit, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def answer(*head: bytes, body: bytes = b"") -> bytes:
    return b"\r\n".join(head) + b"\r\n\r\n" + body


OK = b"HTTP/1.1 200 OK"
HTML = b"Content-Type: text/html"
ANSWERS = {
    "repeated": answer(OK, HTML, b"X-Dup: a", b"x-dup: b", b"Set-Cookie: s=1", b"Set-Cookie: t=2",
                       b"X-MiXeD-Case: Value", b"X-Padded:  \tv \t", b"Content-Length: 2", body=b"hi"),
    "latin-1": answer(OK, HTML, b"X-Place: caf\xe9", b"Content-Length: 2", body=b"hi"),
    "utf-8": answer(OK, HTML, "X-Place: café".encode(), b"Content-Length: 2", body=b"hi"),
    "long-header": answer(OK, HTML, b"Content-Security-Policy: " + b"a" * 20_000, b"Content-Length: 2",
                          body=b"hi"),
    "bad-location": answer(b"HTTP/1.1 302 Found", b"Location: http://[::1", b"Content-Length: 0"),
    # broken answers
    "status-line": answer(b"HTTP/1.1 abc OK", b"Content-Length: 2", body=b"hi"),
    "not-http": b"SSH-2.0-OpenSSH_9.6\r\n",
    "nothing": b"",
    "no-colon": answer(OK, HTML, b"a header line without a colon", b"Content-Length: 2", body=b"hi"),
    "nul": answer(OK, HTML, b"X-Nul: a\x00b", b"Content-Length: 2", body=b"hi"),
    "cut-short": answer(OK, HTML, b"Content-Length: 100", body=b"only this"),
    "bad-chunk": answer(OK, HTML, b"Transfer-Encoding: chunked", body=b"zz\r\nhello\r\n0\r\n\r\n"),
    "two-lengths": answer(OK, HTML, b"Content-Length: 2", b"Content-Length: 3", body=b"hi!"),
    "huge-header": answer(OK, HTML, b"X-Huge: " + b"a" * 70_000, b"Content-Length: 2", body=b"hi"),
}  # fmt: skip


@dataclass
class RawSite:
    port: int
    request_lines: list[bytes] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
async def raw_site() -> AsyncIterator[RawSite]:
    site = RawSite(0)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = await reader.readline()
        site.request_lines.append(request_line.rstrip(b"\r\n"))
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        name = request_line.split(b" ")[1].decode().strip("/").split("/")[0].split("?")[0]
        writer.write(ANSWERS.get(name, answer(OK, HTML, b"Content-Length: 2", body=b"ok")))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    site.port = server.sockets[0].getsockname()[1]
    async with server:
        yield site


@pytest.fixture
async def backend() -> AsyncIterator[DirectBackend]:
    async with DirectBackend(SsrfGuard(["127.0.0.1"])) as direct:
        yield direct


async def test_header_names_are_lower_case_and_repeated_ones_joined(
    raw_site: RawSite, backend: DirectBackend
) -> None:
    """As httpx's ``Headers.items()`` gave them, so classification and raw pages are unchanged."""
    response = await backend.fetch(fetch_request(raw_site.url("/repeated")))
    assert dict(response.headers) == {
        "content-type": "text/html",
        "x-dup": "a, b",
        "set-cookie": "s=1, t=2",
        "x-mixed-case": "Value",
        "x-padded": "v",
        "content-length": "2",
    }


@pytest.mark.parametrize("name", ["latin-1", "utf-8"])
async def test_header_values_are_decoded_as_httpx_decoded_them(
    raw_site: RawSite, backend: DirectBackend, name: str
) -> None:
    response = await backend.fetch(fetch_request(raw_site.url(f"/{name}")))
    assert response.headers["x-place"] == "café"


async def test_a_long_header_line_is_read(raw_site: RawSite, backend: DirectBackend) -> None:
    response = await backend.fetch(fetch_request(raw_site.url("/long-header")))
    assert len(response.headers["content-security-policy"]) == 20_000


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("status-line", "Bad status line"),
        ("not-http", "Bad status line"),
        ("nothing", "Server disconnected"),
        ("no-colon", "Invalid header token"),
        ("nul", "Invalid HTTP header"),
        ("cut-short", "body cut short or malformed: Not enough data"),
        ("bad-chunk", "chunk size"),
        ("two-lengths", "Duplicate Content-Length"),
        ("huge-header", "Got more than 65536 bytes"),
    ],
)
async def test_a_broken_answer_is_connection_failed(
    raw_site: RawSite, backend: DirectBackend, name: str, detail: str
) -> None:
    url = raw_site.url(f"/{name}")
    with pytest.raises(ConnectionFailed, match=re.escape(f"{url}: broken HTTP answer (")) as failed:
        await backend.fetch(fetch_request(url))
    assert detail in str(failed.value)
    assert "\n" not in str(failed.value)
    assert failed.value.outcome is Outcome.CONNECTION_ERROR


async def test_a_redirect_to_no_url_is_an_invalid_target(raw_site: RawSite, backend: DirectBackend) -> None:
    """The frontier could not take its target either: the fetch fails as the base class says."""
    with pytest.raises(InvalidTarget, match=re.escape("redirects to 'http://[::1', which is no URL")):
        await backend.fetch(fetch_request(raw_site.url("/bad-location"), max_redirects=0))


@pytest.mark.parametrize(
    ("path", "request_target"),
    [
        ("/%7Euser/%41%2F?q=a+b%20c", "/%7Euser/%41%2F?q=a+b%20c"),  # escapes kept as they are
        ("/%zz", "/%zz"),
        ("/caf\u00e9 x?q=\u00fc z", "/caf%C3%A9%20x?q=%C3%BC%20z"),
        ("/a/./b/../c?x=|{}", "/a/c?x=|{}"),
        ("/p?q#fragment", "/p?q"),
    ],
)
async def test_the_request_line_spells_the_url_as_httpx_did(
    raw_site: RawSite, backend: DirectBackend, path: str, request_target: str
) -> None:
    await backend.fetch(fetch_request(raw_site.url(path)))
    assert raw_site.request_lines == [f"GET {request_target} HTTP/1.1".encode()]


@pytest.fixture
def unanswering_port() -> Iterator[int]:
    """A port whose accept queue is full: the kernel drops further SYNs, so connecting hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        queued: list[socket.socket] = []
        try:
            for _ in range(8):  # Linux queues backlog + 1 connections; one more then hangs
                queued.append(socket.create_connection(("127.0.0.1", port), timeout=0.2))
            pytest.fail(
                "this kernel accepts connections past a full listen queue: the hanging port this test "
                "needs cannot be made here",
                pytrace=False,
            )
        except TimeoutError:
            yield port
        finally:
            for sock in queued:
                sock.close()


async def test_a_connect_that_hangs_is_a_connect_timeout(
    unanswering_port: int, backend: DirectBackend
) -> None:
    url = f"http://127.0.0.1:{unanswering_port}/"
    with pytest.raises(FetchTimeout, match=re.escape(f"{url}: connect timeout after connect_timeout_s=0.3")):
        await backend.fetch(fetch_request(url, connect_timeout_s=0.3, total_timeout_s=5.0))
