"""Reading a streamed HTTP response: content-type gate, size-capped decoded body, charset.

We decompress ourselves instead of using the HTTP clients' decoders (we read raw chunks): those
inflate each network chunk completely, so a gzip bomb fetched with a 1 MiB cap peaks at tens of MiB
in memory before any size check can stop it. Here every chunk is inflated to at most the room left
under ``max_bytes``. The readers take any response with what :class:`RawResponse` names: the direct
backend's aiohttp answers and the scraping API backend's ``httpx.Response``.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from w3lib.encoding import http_content_type_encoding

from dualplane.control_plane.fetcher.backends.base import FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.exceptions import TooLarge, UndecodableBody, UnwantedContent
from dualplane.core.web.charset import detect_charset

# Only what BoundedDecoder inflates; a server that ignores it gets UndecodableBody.
ACCEPT_ENCODING = "gzip, deflate"
GZIP_WBITS = 16 + zlib.MAX_WBITS
ZLIB_WBITS = zlib.MAX_WBITS
RAW_DEFLATE_WBITS = -zlib.MAX_WBITS


class RawResponse(Protocol):
    """A response whose body is still to be read, as the readers here need it."""

    @property
    def headers(self) -> Mapping[str, str]:
        """Names in lower case (or looked up regardless of case), repeated ones joined with ", "."""
        ...

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body as it arrives, still content-encoded."""
        ...


def decoded_headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """Raw header lines as a plain dict, the way httpx's ``Headers.items()`` gives them.

    Names in lower case (ASCII letters only), a repeated name's values joined with ", " in the
    order received, and every name and value decoded with the first of ASCII, UTF-8 and Latin-1
    that fits them all.
    """
    encoding = _header_encoding(raw)
    headers: dict[str, str] = {}
    for raw_name, raw_value in raw:
        name, value = raw_name.lower().decode(encoding), raw_value.decode(encoding)
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def _header_encoding(lines: Sequence[tuple[bytes, bytes]]) -> str:
    if all(name.isascii() and value.isascii() for name, value in lines):
        return "ascii"
    try:
        for name, value in lines:
            name.decode("utf-8")
            value.decode("utf-8")
    except UnicodeDecodeError:
        return "iso-8859-1"
    return "utf-8"


@dataclass(frozen=True)
class Body:
    """A decoded body; ``truncated`` when it was cut at the size cap."""

    data: bytes
    truncated: bool


class BoundedDecoder:
    """Undoes one ``Content-Encoding`` (identity, gzip, deflate), never producing more than asked."""

    def __init__(self, encoding: str | None, url: str) -> None:
        self.encoding = (encoding or "identity").strip().lower()
        self.url = url
        self._inflater: zlib._Decompress | None = None
        self._started = False
        if self.encoding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(GZIP_WBITS)
        elif self.encoding == "deflate":
            self._inflater = zlib.decompressobj(ZLIB_WBITS)
        elif self.encoding != "identity":
            raise UndecodableBody(
                f"{url} answered with Content-Encoding {encoding!r}, which we do not decode "
                f"(we ask for {ACCEPT_ENCODING!r})",
                final_url=url,
            )

    def decode(self, data: bytes, limit: int) -> bytes:
        """Decoded bytes of ``data``, at most ``limit`` (>= 1) of them; more exist if it returns ``limit``."""
        if self._inflater is None:
            return data[:limit]
        try:
            return self._inflate(data, limit)
        except zlib.error as error:
            raise UndecodableBody(
                f"{self.url}: corrupt {self.encoding} body ({error})", final_url=self.url
            ) from error

    def _inflate(self, data: bytes, limit: int) -> bytes:
        assert self._inflater is not None
        if self.encoding == "deflate" and not self._started:
            self._started = True
            try:
                return self._inflater.decompress(data, limit)
            except zlib.error:
                # "deflate" is often sent raw, without the zlib header the RFC asks for.
                self._inflater = zlib.decompressobj(RAW_DEFLATE_WBITS)
        return self._inflater.decompress(data, limit)

    def flush(self, limit: int) -> bytes:
        """Whatever the decompressor still holds, at most ``limit`` bytes."""
        if self._inflater is None:
            return b""
        try:
            # Every chunk was fully consumed (a capped decode ends the read), so this is small.
            return self._inflater.flush()[:limit]
        except zlib.error as error:
            raise UndecodableBody(
                f"{self.url}: corrupt {self.encoding} body ({error})", final_url=self.url
            ) from error


async def read_response(
    request: FetchRequest,
    response: RawResponse,
    *,
    final_url: str,
    status: int,
    redirect_chain: tuple[str, ...],
    started: float,
    headers: Mapping[str, str] | None = None,
) -> FetchResponse:
    """The :class:`FetchResponse` for ``response`` (answering ``final_url`` with ``status``).

    ``headers`` replaces ``response``'s own headers in the result (a relay's are not the target's).

    A 3xx body is not read. A 2xx of a type ``request`` does not accept raises
    :class:`UnwantedContent` before its body is read; any other status of such a type keeps an
    empty body. A too-large 2xx raises :class:`TooLarge`; other statuses are cut and marked
    ``truncated``, since their status is what matters. ``started`` is a ``time.perf_counter()``.
    """
    content_type_header = response.headers.get("content-type")
    content_type = mime_type(content_type_header)
    body = Body(b"", truncated=False)
    if 200 <= status < 300 and not request.accepts(content_type):
        raise UnwantedContent(
            f"{final_url} is {content_type!r}, not one of the accepted types {request.accept_types}; "
            "not downloaded",
            final_url=final_url,
        )
    if not 300 <= status < 400 and request.accepts(content_type):
        body = await read_capped(response, url=final_url, max_bytes=request.max_bytes, truncate=status >= 300)
    charset = (
        detect_charset(content_type_header, body.data)
        if body.data
        else http_content_type_encoding(content_type_header)
    )
    return FetchResponse(
        url=request.url,
        final_url=final_url,
        status=status,
        headers=dict(response.headers.items() if headers is None else headers.items()),
        body=body.data,
        redirect_chain=redirect_chain,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        content_type=content_type,
        charset=charset,
        truncated=body.truncated,
    )


async def read_capped(response: RawResponse, *, url: str, max_bytes: int, truncate: bool) -> Body:
    """Read ``response``'s body, decoded, stopping as soon as it passes ``max_bytes``.

    Past the cap: with ``truncate`` return the first ``max_bytes`` bytes marked truncated, else
    raise :class:`TooLarge`. Never holds more than ``max_bytes`` plus one network chunk.
    """
    decoder = BoundedDecoder(response.headers.get("content-encoding"), url)
    declared = _content_length(response)
    if declared is not None and declared > max_bytes and decoder.encoding == "identity" and not truncate:
        raise TooLarge(_too_large(url, max_bytes, f"it declares Content-Length {declared}"), final_url=url)
    buffer = bytearray()
    async for chunk in response.aiter_raw():
        room = max_bytes - len(buffer)
        data = decoder.decode(chunk, room + 1)
        if len(data) > room:
            return _over(buffer, data[:room], url, max_bytes, truncate)
        buffer += data
    room = max_bytes - len(buffer)
    data = decoder.flush(room + 1)
    if len(data) > room:
        return _over(buffer, data[:room], url, max_bytes, truncate)
    buffer += data
    return Body(bytes(buffer), truncated=False)


def _over(buffer: bytearray, fits: bytes, url: str, max_bytes: int, truncate: bool) -> Body:
    if not truncate:
        raise TooLarge(_too_large(url, max_bytes, "its body passed the limit"), final_url=url)
    buffer += fits
    return Body(bytes(buffer), truncated=True)


def _too_large(url: str, max_bytes: int, why: str) -> str:
    return (
        f"{url} is larger than the page limit of {max_bytes} bytes ({why}); stopped reading "
        "(raise DUALPLANE_LIMIT_MAX_PAGE_BYTES to keep such pages)"
    )


def mime_type(content_type_header: str | None) -> str | None:
    """``"text/html"`` from ``"Text/HTML; charset=utf-8"``; None when missing or empty."""
    kind = (content_type_header or "").split(";", 1)[0].strip().lower()
    return kind or None


def _content_length(response: RawResponse) -> int | None:
    try:
        return int(response.headers["content-length"])
    except (KeyError, ValueError):
        return None
