"""Links of an HTML page: absolute, de-duplicated, with rel and nofollow kept.

Parsed with selectolax (the Lexbor engine: fast, and forgiving of broken HTML), or read from a tree
the caller parsed already (the extractor shares one with :class:`~data_plane.extract.markup.Markup`,
read before that changes it). ``<base href>``
is honoured, whitespace inside href values is trimmed, fragments are dropped, and links that
cannot be crawled (``javascript:``, ``mailto:``, ``tel:``, data URIs) are left out and counted by
scheme (``dualplane_extract_skipped_links_total``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser as HTMLParser

from core.web.urls import without_credentials
from data_plane.extract import metrics

CRAWLABLE_SCHEMES = frozenset({"http", "https"})
MAX_TEXT = 200


@dataclass(frozen=True)
class Link:
    url: str
    rel: str | None
    nofollow: bool
    text: str | None


def extract_links(html: str | HTMLParser, page_url: str) -> list[Link]:
    """Every crawlable ``<a href>`` of ``html`` (or of its parsed tree) resolved against ``page_url``
    (or ``<base href>``)."""
    tree = HTMLParser(html) if isinstance(html, str) else html
    base = _base_url(tree, page_url)
    page_nofollow = _meta_nofollow(tree)
    links: dict[str, Link] = {}
    # A page repeats many hrefs (menus, "read more" next to a headline): each is resolved once. A
    # repeat of an uncrawlable one is counted again, as every anchor it stands for was before.
    resolved: dict[str, tuple[str | None, str | None]] = {}
    for anchor in tree.css("a[href]"):
        href = (anchor.attributes.get("href") or "").strip()
        if href not in resolved:
            resolved[href] = _absolute(href, base)
        url, skipped_scheme = resolved[href]
        if skipped_scheme is not None:
            metrics.skipped_link(skipped_scheme)
        if url is None or url in links:
            continue
        rel = (anchor.attributes.get("rel") or "").strip().lower() or None
        nofollow = page_nofollow or (rel is not None and "nofollow" in rel.split())
        text = " ".join(anchor.text(separator=" ").split())[:MAX_TEXT] or None
        links[url] = Link(url, rel, nofollow, text)
    return list(links.values())


def _base_url(tree: HTMLParser, page_url: str) -> str:
    base = tree.css_first("base[href]")
    href = (base.attributes.get("href") or "").strip() if base else ""
    return urljoin(page_url, href) if href else page_url


def _meta_nofollow(tree: HTMLParser) -> bool:
    for meta in tree.css("meta[name]"):
        if (meta.attributes.get("name") or "").lower() == "robots":
            return "nofollow" in (meta.attributes.get("content") or "").lower()
    return False


def _absolute(href: str, base: str) -> tuple[str | None, str | None]:
    """The crawlable URL ``href`` stands for (or ``None``), and the scheme to count it under when it
    is skipped for its scheme (or ``None``)."""
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
