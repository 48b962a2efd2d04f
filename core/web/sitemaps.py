"""Sitemap parsing (sitemaps.org 0.9): a urlset or a sitemap index, plain or gzip, streamed.

A sitemap may hold 50,000 URLs and 50 MB uncompressed, so it is never read whole: lxml's
``iterparse`` reads it in chunks, each ``<url>`` / ``<sitemap>`` element is cleared once its
entry is yielded, and memory stays flat however long the file is. A gzip file (``.xml.gz``, or a
body whose first bytes say gzip) is inflated on the way in, and the cap counts inflated bytes.
No entity is resolved and no DTD or network is read (XXE and entity bombs stay inert).
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import IO, Literal, Protocol, cast

from lxml import etree  # type: ignore[import-untyped]

from dualplane.core.web.exceptions import InvalidUrl, SitemapInvalid, SitemapTooLarge
from dualplane.core.web.urls import domain_of

MAX_SITEMAP_BYTES = 50 * 1024 * 1024
"""The protocol's limit on one sitemap file, uncompressed (50 MiB)."""

MAX_SITEMAP_URLS = 50_000
"""The protocol's limit on the entries of one sitemap file (URLs, or sitemaps of an index)."""

MAX_LOC_CHARS = 2048  # the protocol's limit on a <loc>
GZIP_MAGIC = b"\x1f\x8b"
ENTRY_TAGS = ("url", "sitemap")
WATCHED = ("{*}urlset", "{*}sitemapindex", "{*}url", "{*}sitemap")  # in any namespace, or none
SitemapKind = Literal["urlset", "sitemapindex"]

# W3C datetime (the profile of ISO 8601 the protocol names): YYYY, YYYY-MM, YYYY-MM-DD, and with a
# time hh:mm, hh:mm:ss or hh:mm:ss.s, then a zone (Z or +hh:mm). Real sitemaps also drop the zone
# or its colon; both are read, a zone-less time as UTC.
_W3C = re.compile(
    r"(?P<y>\d{4})(?:-(?P<mo>\d{2})(?:-(?P<d>\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d+))?)?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?)?)?)?"
)


class Readable(Protocol):
    """What the parser reads from: a file, a spooled body, a socket's stream."""

    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True)
class SitemapEntry:
    """One ``<url>`` of a urlset (a page) or one ``<sitemap>`` of an index (another sitemap)."""

    url: str
    lastmod_ms: int | None  # epoch milliseconds, None when absent or unreadable
    domain: str  # host[:port] of ``url``, as domain_of gives it: for scope and shard, parsed once


def parse_lastmod(text: str) -> int | None:
    """``text`` as a W3C datetime in epoch milliseconds (a bare date is midnight UTC); None if it is none."""
    match = _W3C.fullmatch(text.strip())
    if match is None:
        return None
    part = match.groupdict()
    try:
        moment = datetime(
            int(part["y"]), int(part["mo"] or 1), int(part["d"] or 1),
            int(part["h"] or 0), int(part["mi"] or 0), int(part["s"] or 0),
            int((part["f"] or "0")[:6].ljust(6, "0")), tzinfo=_zone(part["tz"]),
        )  # fmt: skip
    except ValueError:  # month 13, 25:00, offset past 24 h
        return None
    return int(moment.timestamp() * 1000)


def _zone(tz: str | None) -> timezone:
    if tz is None or tz == "Z":
        return UTC
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


class SitemapParser:
    """Streams the entries of one sitemap; counts what it skipped.

    Iterate :meth:`entries` once. Its ``kind`` is known after the first entry (or the end):
    ``urlset`` entries are pages, ``sitemapindex`` entries are sitemaps. Raises
    :class:`SitemapInvalid` for a body that is no sitemap (not XML, broken XML, another root) and
    :class:`SitemapTooLarge` past ``max_bytes`` inflated or ``max_urls`` entries; entries yielded
    before the error stand (a truncated sitemap's first half is still good).
    """

    def __init__(
        self,
        stream: Readable,
        *,
        url: str,
        max_bytes: int = MAX_SITEMAP_BYTES,
        max_urls: int = MAX_SITEMAP_URLS,
    ) -> None:
        self.url = url
        self.max_bytes = max_bytes
        self.max_urls = max_urls
        self.kind: SitemapKind | None = None
        self.entries_read = 0
        self.bad_locs = 0  # a <loc> that is no http(s) URL, or longer than 2,048 characters
        self._stream = _Capped(_inflated(stream), max_bytes, url)

    def __repr__(self) -> str:
        return f"SitemapParser(url={self.url!r}, kind={self.kind!r}, entries_read={self.entries_read})"

    def entries(self) -> Iterator[SitemapEntry]:
        # Events for the four elements that matter only: an entry's <loc> and <lastmod> are read from
        # its element, not handed to Python one by one (a third of the CPU a URL).
        events = etree.iterparse(
            self._stream, events=("start", "end"), tag=WATCHED, resolve_entities=False, load_dtd=False,
            no_network=True, huge_tree=False, remove_comments=True, remove_pis=True,
        )  # fmt: skip
        try:
            for event, element in events:
                if self.kind is None:
                    self.kind = self._root_kind(element.getroottree().getroot())
                if event == "end" and _local(element) in ENTRY_TAGS:
                    entry = self._entry(element)
                    _forget(element)
                    if entry is not None:
                        yield entry
        except etree.XMLSyntaxError as error:
            if self._stream.bytes_read == 0:
                raise SitemapInvalid(f"{self.url}: empty body, no <urlset> or <sitemapindex>") from error
            raise SitemapInvalid(f"{self.url}: not a well-formed XML sitemap ({error.msg})") from error
        except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
            raise SitemapInvalid(f"{self.url}: corrupt gzip data ({error})") from error
        if self.kind is None:  # well-formed, but none of the four elements anywhere
            self._root_kind(events.root)

    def _root_kind(self, element: etree._Element) -> SitemapKind:
        name = _local(element)
        if name not in ("urlset", "sitemapindex"):
            raise SitemapInvalid(f"{self.url}: the root element is <{name}>, not <urlset> or <sitemapindex>")
        return "urlset" if name == "urlset" else "sitemapindex"

    def _entry(self, element: etree._Element) -> SitemapEntry | None:
        self.entries_read += 1
        if self.entries_read > self.max_urls:
            raise SitemapTooLarge(
                f"{self.url}: lists more than {self.max_urls:,} entries (the protocol's limit)"
            )
        loc = lastmod = None
        for child in element:
            name = _local(child)
            if name == "loc":
                loc = (child.text or "").strip()
            elif name == "lastmod":
                lastmod = parse_lastmod(child.text or "")
        domain = _domain(loc) if loc and len(loc) <= MAX_LOC_CHARS else None
        if loc is None or domain is None:
            self.bad_locs += 1
            return None
        return SitemapEntry(loc, lastmod, domain)


def _local(element: etree._Element) -> str:
    """The tag without its namespace: sitemaps without the xmlns (or with a wrong one) are common."""
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _forget(element: etree._Element) -> None:
    """Drop a read entry and the empty husks of earlier ones: the tree never grows."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    while parent is not None and element.getprevious() is not None:
        del parent[0]


def _domain(url: str) -> str | None:
    try:
        return domain_of(url)
    except InvalidUrl:
        return None


def _inflated(stream: Readable) -> Readable:
    """``stream``, inflated when it starts with the gzip magic (a ``.xml.gz`` sent as it is stored)."""
    peeked = _Peeked(stream)
    if peeked.head.startswith(GZIP_MAGIC):
        return gzip.GzipFile(fileobj=cast("IO[bytes]", peeked), mode="rb")  # reads only: read() is enough
    return peeked


class _Peeked:
    """A read-only stream whose first two bytes were looked at and are read again."""

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self.head = stream.read(2)

    def read(self, size: int = -1, /) -> bytes:
        head, self.head = self.head, b""
        if size < 0:
            return head + self._stream.read()
        return head + self._stream.read(max(size - len(head), 0)) if head else self._stream.read(size)


class _Capped:
    """Reads through to ``stream`` and raises :class:`SitemapTooLarge` past ``max_bytes``."""

    def __init__(self, stream: Readable, max_bytes: int, url: str) -> None:
        self._stream = stream
        self._left = max_bytes
        self._max_bytes = max_bytes
        self._url = url
        self.bytes_read = 0

    def read(self, size: int = -1, /) -> bytes:
        want = self._left + 1 if size < 0 else min(size, self._left + 1)
        chunk = self._stream.read(want)
        self._left -= len(chunk)
        self.bytes_read += len(chunk)
        if self._left < 0:
            raise SitemapTooLarge(f"{self._url}: larger than {self._max_bytes:,} bytes uncompressed")
        return chunk
