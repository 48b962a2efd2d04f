"""Links of an HTML page: absolute, de-duplicated, with rel, nofollow and (optionally) anchor text.

Used twice on every page: by the fetcher, which hands the page's links to the frontier as soon as
Kafka has the page (so the crawl moves at fetch speed), and by the extractor, which lists them in the
record. Parsed with selectolax (the Lexbor engine: fast, and forgiving of broken HTML), or read from
a tree the caller parsed already (the extractor shares one with its markup heuristics).
``<base href>`` is honoured, whitespace around href values is trimmed, fragments are dropped,
credentials (``user:password@``) are stripped, and links that cannot be crawled (``javascript:``,
``mailto:``, ``tel:``, data URIs...) are left out and counted by scheme in :attr:`PageLinks.skipped`
(the caller owns the metric). ``rel`` ``nofollow``, ``ugc`` and ``sponsored``, and a
``<meta name="robots" content="nofollow">``, make a link ``nofollow``.

Resolving an href is the hot part (a page has hundreds): :func:`resolver` builds, once per page,
a function that resolves the common shapes (an absolute http(s) URL, ``//host/...``, ``/root``, a
plain relative path, ``?query``) by string operations, and calls :func:`urllib.parse.urljoin` only for
the rare rest (dot segments, other schemes, ``;`` parameters, control characters...). The result is
always exactly ``urldefrag(urljoin(base, href))`` (tests/core/web/test_links.py proves it by
property test).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlparse, urlsplit, urlunparse

from selectolax.lexbor import LexborHTMLParser

from dualplane.core.web.urls import without_credentials

CRAWLABLE_SCHEMES = frozenset({"http", "https"})
NOFOLLOW_RELS = frozenset({"nofollow", "ugc", "sponsored"})
MAX_TEXT_CHARS = 200
"""Anchor text is cut to this many characters."""

Resolved = tuple[str | None, str | None]
"""``(crawlable absolute URL or None, scheme it was skipped for or None)``."""

# A scheme as urlsplit finds one: a letter, then letters, digits, "+", "-", "." up to a ":".
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


@dataclass(frozen=True, slots=True)
class Link:
    url: str
    rel: str | None
    nofollow: bool
    text: str | None


@dataclass
class PageLinks:
    """A page's crawlable links in document order, and the anchors left out for their scheme."""

    links: list[Link] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    """Lower-case scheme -> anchors left out for it (each anchor, repeats included)."""

    def followed(self, *, follow_nofollow: bool = False) -> list[str]:
        """The URLs a crawler follows: all of them, or only those not marked nofollow."""
        return [link.url for link in self.links if follow_nofollow or not link.nofollow]


def page_links(html: str | bytes | LexborHTMLParser, page_url: str, *, texts: bool = True) -> PageLinks:
    """Every crawlable ``<a href>`` of ``html`` (or of its parsed tree), resolved against ``page_url``
    (or ``<base href>``). ``texts=False`` leaves ``Link.text`` None (the fetcher has no use for it)."""
    tree = html if isinstance(html, LexborHTMLParser) else LexborHTMLParser(html)
    # One walk of the tree for all three (each css() call walks all of it): the first <base href>
    # and the first robots <meta> count wherever they are, so anchors are resolved after the walk.
    base_href: str | None = None
    robots: str | None = None
    anchors = []
    for node in tree.css("a[href], base[href], meta[name]"):
        tag = node.tag
        if tag == "a":
            anchors.append(node)
        elif tag == "base":
            if base_href is None:
                base_href = (node.attributes.get("href") or "").strip()
        elif robots is None and (node.attributes.get("name") or "").lower() == "robots":
            robots = (node.attributes.get("content") or "").lower()
    resolve = resolver(_base_url(page_url, base_href))
    page_nofollow = robots is not None and "nofollow" in robots
    found = PageLinks()
    seen: set[str] = set()
    # A page repeats many hrefs (menus, "read more" next to a headline): each is resolved once. A
    # repeat of an uncrawlable one is counted again, as every anchor it stands for is left out.
    resolved: dict[str, Resolved] = {}
    for anchor in anchors:
        # attrs reads one attribute; attributes would build a dict of all of them for each anchor.
        attributes = anchor.attrs
        href = (attributes.get("href") or "").strip()
        outcome = resolved.get(href)
        if outcome is None:
            outcome = resolved[href] = resolve(href)
        url, skipped_scheme = outcome
        if skipped_scheme is not None:
            found.skipped[skipped_scheme] += 1
        if url is None or url in seen:
            continue
        seen.add(url)
        rel = (attributes.get("rel") or "").strip().lower() or None
        nofollow = page_nofollow or (rel is not None and not NOFOLLOW_RELS.isdisjoint(rel.split()))
        text = " ".join(anchor.text(separator=" ").split())[:MAX_TEXT_CHARS] or None if texts else None
        found.links.append(Link(url, rel, nofollow, text))
    return found


def _base_url(page_url: str, base_href: str | None) -> str:
    try:
        return urljoin(page_url, base_href) if base_href else page_url
    except ValueError:  # an unparseable <base href>: links resolve against the page itself
        return page_url


def resolve_slowly(href: str, base: str) -> Resolved:
    """What ``href`` on a page at ``base`` stands for, by ``urljoin`` (the reference; the fallback)."""
    if not href or href.startswith("#"):
        return None, None
    try:
        url, _fragment = urldefrag(urljoin(base, href))
        scheme = urlsplit(url).scheme
    except ValueError:
        return None, None  # e.g. an invalid IPv6 literal in a link: skip that link, not the page
    if scheme not in CRAWLABLE_SCHEMES:
        return None, scheme.lower()
    return without_credentials(url), None


def resolver(base: str) -> Callable[[str], Resolved]:
    """A function resolving hrefs against ``base`` like :func:`resolve_slowly`, but fast for the
    shapes real pages use: string operations on ``base``'s parts, split once here."""
    try:
        scheme, netloc, path, params, _query, _fragment = urlparse(base)
        prefix = urlunparse((scheme, netloc, path, params, "", ""))
    except ValueError:
        scheme = ""
    if scheme not in CRAWLABLE_SCHEMES or not netloc or not base.isprintable() or not netloc.isascii():
        return lambda href: resolve_slowly(href, base)  # an odd base: every href the slow way
    origin = f"{scheme}://{netloc}"
    # The directory a relative path joins: urljoin drops the last segment and empty segments between
    # (and resolves dot segments, which only the slow way does).
    directory = [segment for segment in path.split("/")[:-1] if segment]
    relative_ok = path.startswith("/") and not any(s in (".", "..") for s in directory)
    directory_prefix = origin + "/" + "".join(segment + "/" for segment in directory)
    base_segments = ["", *directory] if relative_ok else None

    def resolve(href: str) -> Resolved:
        url = _fast(href, scheme, origin, prefix, directory_prefix if relative_ok else None)
        if url is None and base_segments is not None:
            url = _up_and_down(href, origin, base_segments)
        if url is None:
            return resolve_slowly(href, base)
        if url.startswith(":"):
            return None, url[1:]  # skipped for its scheme
        return (without_credentials(url) if url else None), None

    return resolve


def _fast(href: str, scheme: str, origin: str, prefix: str, directory: str | None) -> str | None:
    """``href`` resolved; "" for nothing (a bare fragment, empty); ":scheme" when it is skipped for
    its scheme; None: leave it to urljoin."""
    before = href.partition("#")[0]
    if not before:
        return ""  # "" or "#..." (resolve_slowly agrees: the page itself is not a link)
    if before[0] <= " " or not before.isprintable():
        return None  # control characters or spaces that urlsplit removes
    named = _SCHEME.match(before) if ":" in before else None
    if named is not None:
        return _with_scheme(before, named.end())
    if ";" in before or before.endswith("?"):
        return None  # parameters, an empty query (urljoin drops both)
    return _without_scheme(before, scheme, origin, prefix, directory)


def _without_scheme(before: str, scheme: str, origin: str, prefix: str, directory: str | None) -> str | None:
    if before.startswith("//"):
        return f"{scheme}:{before}" if _plain_netloc(before, 2) else None
    if before[0] == "/":
        return origin + before if "/." not in before.partition("?")[0] else None
    if before[0] == "?":
        return prefix + before
    path = before.partition("?")[0]
    if directory is None or path.startswith(".") or "/." in path or "//" in path:
        return None  # dot segments (urljoin resolves them) or empty segments (it drops them)
    return directory + before


def _up_and_down(href: str, origin: str, base_segments: list[str]) -> str | None:
    """A relative ``href`` whose path opens with dot segments ("../../reference/x.html", "./y.html"),
    the shape of every link between a documentation generator's pages, resolved as urljoin does: each
    ".." drops a segment of the base's directory (``base_segments``, after the empty one before the first
    "/"), above its root none. None for any other shape: dot segments further on, empty segments, a
    path ending in a dot segment, or what :func:`_fast` refused for other reasons (a scheme, parameters,
    an empty query, control characters, spaces at either end)."""
    before = href.partition("#")[0]
    if not before or before[0] != "." or ";" in before or before.endswith("?") or not before.isprintable():
        return None
    if before[-1] <= " ":
        return None
    path, mark, query = before.partition("?")
    parts = path.split("/")
    opening = 0
    while opening < len(parts) - 1 and parts[opening] in (".", ".."):
        opening += 1
    rest = parts[opening:]
    if not opening or any(part in ("", ".", "..") for part in rest[:-1]) or rest[-1] in (".", ".."):
        return None
    if ":" in rest[0]:
        return None  # "a:b" after the dots stays relative, but leave every colon to urljoin
    resolved = list(base_segments)
    for part in parts[:opening]:
        if part == ".." and resolved:
            resolved.pop()
    joined = "/".join([*resolved, *rest])
    return f"{origin}{'' if joined.startswith('/') else '/'}{joined}{mark}{query}"


def _with_scheme(before: str, after_colon: int) -> str | None:
    """An href with a scheme: kept as it is when it is a plain absolute http(s) URL (as urljoin
    keeps it), ":scheme" for another scheme without a "//host" (which urlsplit may refuse)."""
    named = before[: after_colon - 1]
    has_host = before.startswith("//", after_colon)
    if named in CRAWLABLE_SCHEMES and has_host:
        plain = ";" not in before and not before.endswith("?") and _plain_netloc(before, after_colon + 2)
        return before if plain else None
    lowered = named.lower()
    return None if lowered in CRAWLABLE_SCHEMES or has_host else ":" + lowered


def _plain_netloc(url: str, start: int) -> bool:
    """Whether the host part of ``url`` from ``start`` is non-empty, ASCII and without brackets (an
    IPv6 literal, which urlsplit validates). Dot segments stay: urljoin keeps them in absolute URLs."""
    end = len(url)
    for stop in "/?":
        found = url.find(stop, start)
        if found != -1 and found < end:
            end = found
    netloc = url[start:end]
    return bool(netloc) and netloc.isascii() and "[" not in netloc and "]" not in netloc
