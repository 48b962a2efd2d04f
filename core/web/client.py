"""The guarded outbound HTTP client: what the crawler fetches on its own account (robots.txt, sitemaps).

Three promises, whoever calls it:

- every hop, the first and each redirect, is allowed by the SSRF guard before it is requested
  (:func:`core.web.hops.allowed_hop`), and the socket goes only to an address the guard checked
  (:mod:`core.web.pinned`): the fetcher's direct backend keeps the same two rules with the same code;
- one deadline covers the whole answer (connect, head, every redirect, body): a per-read timeout
  let a server trickling its head at a byte a second hold the caller for as long as it liked;
- the body is capped (``max_bytes``), also when the server compresses it against our asking.

aiohttp as the fetcher's direct backend uses it: only the transport, redirects and decompression ours.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

import aiohttp

from dualplane.core.web.exceptions import OutboundFailed, OutboundTimeout
from dualplane.core.web.hops import allowed_hop, redirect_target
from dualplane.core.web.pinned import pinned_connector
from dualplane.core.web.ssrf import SsrfGuard

MAX_HEAD_LINE_BYTES = 64 * 1024  # as the direct backend: some real sites send long CSP headers
MAX_HEADERS = 128
INFLATE_WBITS = 32 + zlib.MAX_WBITS  # gzip or zlib, told apart by the header


@dataclass(frozen=True)
class HttpAnswer:
    """The last answer of a guarded GET: its status, the first ``max_bytes`` of its body (when read)."""

    status: int
    body: bytes
    truncated: bool
    final_url: str
    redirects: int


class GuardedClient:
    """GETs through ``guard`` with a whole-answer deadline and a size cap; one event loop only.

    The session is made at the first request, on its loop (aiohttp's rule). ``connector`` builds
    the connector on that loop (tests: another network); by default it is the pinned one.
    """

    def __init__(
        self,
        guard: SsrfGuard,
        *,
        user_agent: str,
        max_connections: int = 16,
        connector: Callable[[], aiohttp.BaseConnector] | None = None,
    ) -> None:
        self.guard = guard
        self.user_agent = user_agent
        self._connector = connector or (lambda: pinned_connector(guard, max_connections))
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"GuardedClient(user_agent={self.user_agent!r})"

    async def get(
        self,
        url: str,
        *,
        deadline_s: float,
        max_bytes: int,
        max_redirects: int,
        body_of_2xx_only: bool = True,
        into: IO[bytes] | None = None,
    ) -> HttpAnswer:
        """GET ``url``, following at most ``max_redirects`` redirects, each one checked by the guard.

        Past ``max_redirects`` the last redirect answer is returned as it is. The body is read for a
        2xx answer (any answer with ``body_of_2xx_only=False``), cut at ``max_bytes``. Raises
        :class:`~core.web.exceptions.UnsafeUrl` for a hop the guard refuses, :class:`OutboundTimeout`
        past ``deadline_s``, :class:`OutboundFailed` for anything else that is no answer.

        With ``into``, the body is written there as it arrives (still decoded and capped) and the
        answer's ``body`` is empty: a 50 MB sitemap then never sits in memory whole.
        """
        try:
            async with asyncio.timeout(deadline_s):
                return await self._follow(url, max_bytes, max_redirects, body_of_2xx_only, into)
        except TimeoutError as error:
            raise OutboundTimeout(f"{url}: no complete answer within {deadline_s} s") from error
        except aiohttp.ClientError as error:
            raise OutboundFailed(f"{url}: {type(error).__name__} ({error or 'no detail'})") from error
        except ValueError as error:  # a port out of range, a host IDNA cannot encode, a bad Location
            raise OutboundFailed(f"cannot request {url}: {error}") from error

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def _follow(
        self, url: str, max_bytes: int, max_redirects: int, body_of_2xx_only: bool, into: IO[bytes] | None
    ) -> HttpAnswer:
        session = self._open()
        for redirects in range(max_redirects + 1):
            target = await allowed_hop(self.guard, url)
            async with session.get(
                target,
                headers={"User-Agent": self.user_agent, "Accept-Encoding": "identity"},
                allow_redirects=False,
            ) as response:
                headers = {name.lower(): value for name, value in response.headers.items()}
                location = redirect_target(response.status, headers, url)
                if location is None or redirects == max_redirects:
                    wanted = 200 <= response.status < 300 or not body_of_2xx_only
                    body, truncated = (
                        await _read_capped(response, max_bytes, into) if wanted else (b"", False)
                    )
                    return HttpAnswer(response.status, body, truncated, url, redirects)
            url = location
        raise AssertionError("unreachable: the loop returns on its last round")

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=self._connector(),
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,  # no proxy from whoever set HTTP_PROXY: it would bypass the pinning
                auto_decompress=False,  # inflated below, within the cap
                max_line_size=MAX_HEAD_LINE_BYTES,
                max_field_size=MAX_HEAD_LINE_BYTES,
                max_headers=MAX_HEADERS,
            )
        return self._session


async def _read_capped(
    response: aiohttp.ClientResponse, max_bytes: int, into: IO[bytes] | None = None
) -> tuple[bytes, bool]:
    """The first ``max_bytes`` of the decoded body (written to ``into`` if given), and whether there was
    more."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    inflater = zlib.decompressobj(INFLATE_WBITS) if encoding in ("gzip", "x-gzip", "deflate") else None
    body = bytearray()
    read = 0
    try:
        async for chunk in response.content.iter_any():
            room = max_bytes - read
            piece = inflater.decompress(chunk, room + 1) if inflater is not None else chunk[: room + 1]
            read += len(piece)
            if into is not None:
                into.write(piece[:room])
            else:
                body += piece
            if read > max_bytes:
                return bytes(body[:max_bytes]), True
    except zlib.error as error:
        raise OutboundFailed(f"{response.url}: corrupt {encoding} body ({error})") from error
    return bytes(body), False
