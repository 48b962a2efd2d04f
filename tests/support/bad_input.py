"""The bad-input corpus: a test site serving each case, and the one table of expected outcomes that
``tests/reliability/test_bad_input_corpus.py`` checks and docs/testing.md shows (rendered by
:func:`markdown_table`; a test fails when the page's copy differs).

An outcome reads ``<fetch> → <what became of it>``: the fetch outcome class (or the error that
refused the fetch) and, for a page fetched, its record's facts: links kept and skipped by scheme,
characters that the decode made up (U+FFFD), whether there is text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web

MIB = 1024 * 1024
LONG_QUERY = "q=" + "x" * 8300  # an 8 KB URL: longer than the 8,192 characters a URL may have here
SCHEME_LINKS = (
    '<a href="javascript:void(0)">js</a> <a href="data:text/html,hi">data</a> '
    '<a href="mailto:shop@example.invalid">mail</a> <a href="/ok">ok</a>'
)


@dataclass(frozen=True)
class Case:
    path: str
    serves: str
    expected: str


CASES: tuple[Case, ...] = (
    Case("/truncated", "HTML cut off mid-tag", "ok → record with text, 1 link"),
    Case("/malformed", "unclosed and stray tags, `<<>>` soup", "ok → record with text, 1 link"),
    Case("/empty", "200 with an empty body", "ok → record without text"),
    Case("/binary", "PNG bytes as `text/html; charset=utf-8`", "ok → record without text, 1 U+FFFD counted"),
    Case("/huge", "a 30 MB HTML page (limit 5 MiB)", "refused: TooLarge (too_large)"),
    Case("/lying-charset", "Latin-1 bytes said to be UTF-8", "ok → record with text, 3 U+FFFD counted"),
    Case("/idn", "links to an IDN host and a non-ASCII path", "ok → record with text, 2 links"),
    Case("/long-url", "a link of 8,300 characters", "ok → record with text, 1 link"),
    Case("/schemes", "`javascript:`, `data:`, `mailto:` links",
         "ok → record with text, 1 link, skipped data 1, javascript 1, mailto 1"),
    Case("/loop-a", "a redirect loop a → b → a", "redirect (returned at the repeat)"),
    Case("/drip", "a body dripped a byte every 50 ms", "refused: FetchTimeout (timeout)"),
    Case("/rate-limited", "429 with `Retry-After: 7`", "rate_limited, retry after 7 s"),
    Case("/storm", "503 on every request", "server_error"),
)  # fmt: skip


def markdown_table() -> str:
    """The cases as docs/testing.md shows them."""
    rows = [f"| `{case.path}` | {case.serves} | {case.expected} |" for case in CASES]
    return "\n".join(["| path | the site serves | outcome |", "|---|---|---|", *rows])


def _html(body: str, status: int = 200, charset: str = "utf-8") -> web.Response:
    return web.Response(body=body.encode(charset), status=status, content_type="text/html", charset=charset)


async def _drip(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/html"})
    await response.prepare(request)
    try:
        for _ in range(200):
            await response.write(b"<")
            await asyncio.sleep(0.05)
    except (ConnectionResetError, RuntimeError):
        pass  # the fetcher gave up, as it should
    return response


async def _huge(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/html"})
    response.content_length = 30 * MIB
    await response.prepare(request)
    chunk = b"<p>" + b"x" * (MIB - 8) + b"</p>\n"
    try:
        for _ in range(30):
            await response.write(chunk[:MIB])
    except (ConnectionResetError, RuntimeError):
        pass
    return response


def _bytes(body: bytes, content_type: str) -> web.Response:
    return web.Response(body=body, headers={"Content-Type": content_type})


PARAGRAPH = "<p>A paragraph of plain words, long enough to be taken for the main text of this page.</p>"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
LATIN_1 = f"<html><body>{PARAGRAPH}<p>Café Müller, Menü</p></body></html>".encode("latin-1")
PAGES = {
    "/truncated": lambda: _html(f"<html><body>{PARAGRAPH}<a href='/next'>next</a><p>cut off <di"),
    "/malformed": lambda: _html(f"<html><body><div><b>{PARAGRAPH}<<>></i><a href=/next>n</a><td></html>"),
    "/empty": lambda: _bytes(b"", "text/html; charset=utf-8"),
    "/binary": lambda: _bytes(PNG, "text/html; charset=utf-8"),
    "/lying-charset": lambda: _bytes(LATIN_1, "text/html; charset=utf-8"),
    "/idn": lambda: _html(f"<html><body>{PARAGRAPH}<a href='http://bücher.example/'>b</a>"
                          "<a href='/straße/café'>c</a></body></html>"),
    "/long-url": lambda: _html(f"<html><body>{PARAGRAPH}<a href='/q?{LONG_QUERY}'>long</a></body></html>"),
    "/schemes": lambda: _html(f"<html><body>{PARAGRAPH}{SCHEME_LINKS}</body></html>"),
    "/loop-a": lambda: web.Response(status=302, headers={"Location": "/loop-b"}),
    "/loop-b": lambda: web.Response(status=302, headers={"Location": "/loop-a"}),
    "/rate-limited": lambda: web.Response(text="slow down", status=429, headers={"Retry-After": "7"}),
    "/storm": lambda: web.Response(text="busy", status=503),
}  # fmt: skip


def make_app() -> web.Application:
    """The corpus site: every case of :data:`CASES` at its path."""
    app = web.Application()
    for path, page in PAGES.items():

        async def handler(_request: web.Request, page: object = page) -> web.Response:
            return page()  # type: ignore[operator, no-any-return]

        app.router.add_get(path, handler)
    app.router.add_get("/drip", _drip)
    app.router.add_get("/huge", _huge)
    return app
