"""A fetched page's links for the frontier, parsed once, as soon as the page is in hand.

The fetcher hands them on in the AMQP transaction that acks the task, after Kafka confirmed the
page (:mod:`.runner`), so the crawl moves at fetch speed: it never waits for extraction. Only a 2xx
HTML body (by its media type, or sniffed when the type is missing or generic) is parsed, from the
bytes in hand (a claim-checked body too), with :func:`core.web.links.page_links`; links marked
nofollow (``rel`` nofollow, ugc, sponsored, or a robots ``<meta>``) are left out unless
``DUALPLANE_FETCH_FOLLOW_NOFOLLOW``. At most ``DUALPLANE_FETCH_MAX_LINKS_PER_PAGE`` go on (in
document order); the rest are counted (``dualplane_fetch_links_over_limit_total``, the job's
``links_over_limit``) and the page logged. A body larger than ``INLINE_PARSE_MAX_BYTES`` is parsed
on a worker thread (Lexbor lets the event loop run meanwhile); one nested too deep to parse in
reasonable time is not parsed at all (the extractor dead-letters it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser

from dualplane.control_plane.fetcher import metrics
from dualplane.control_plane.fetcher.backends.base import FetchResponse
from dualplane.control_plane.fetcher.fingerprint import text_fingerprint
from dualplane.core.settings import FetchSettings
from dualplane.core.web.html import MAX_NESTING, is_html, too_deep
from dualplane.core.web.links import page_links

log = logging.getLogger(__name__)

# About 2 ms of parsing on this machine: below it a thread hop costs more than it saves.
INLINE_PARSE_MAX_BYTES = 128 * 1024


@dataclass(frozen=True)
class FoundLinks:
    """The URLs to hand to the frontier, and how many more the per-page cap left out."""

    urls: tuple[str, ...] = ()
    over_limit: int = 0
    fingerprint: str | None = None  # of the visible text, when asked for (see .fingerprint)


NO_LINKS = FoundLinks()


async def links_of(
    response: FetchResponse, settings: FetchSettings, *, fingerprint: bool = False
) -> FoundLinks:
    """The followable links of a fetched 2xx page (none for another status or a non-HTML body), and
    with ``fingerprint`` the fingerprint of its visible text, from the same parse.

    Never raises: a page whose links cannot be parsed still goes to Kafka (its links are lost to the
    crawl, logged and counted; the extractor reports what is wrong with the page).
    """
    if not 200 <= response.status < 300 or not response.body:
        return NO_LINKS
    try:
        if len(response.body) <= INLINE_PARSE_MAX_BYTES:
            return parse_links(response, settings, fingerprint=fingerprint)
        return await asyncio.to_thread(parse_links, response, settings, fingerprint=fingerprint)
    except Exception:
        log.exception("could not parse the links of %s", response.final_url)
        metrics.LINK_PAGES_UNPARSED.inc()
        return NO_LINKS


def parse_links(response: FetchResponse, settings: FetchSettings, *, fingerprint: bool = False) -> FoundLinks:
    """:func:`links_of`, on the calling thread."""
    body = response.body
    if not is_html(response.content_type, body):
        return NO_LINKS
    depth = too_deep(body)
    if depth is not None:
        log.warning("%s nests block elements %d deep (limit %d): its links are not parsed",
                    response.final_url, depth, MAX_NESTING)  # fmt: skip
        metrics.LINK_PAGES_UNPARSED.inc()
        return NO_LINKS
    started = time.thread_time()
    # Lexbor reads UTF-8 bytes as they are; other charsets are decoded first, as the extractor does.
    codec = response.charset or "utf-8"
    html = body if codec in ("utf-8", "ascii") else body.decode(codec, errors="replace")
    tree = LexborHTMLParser(html)
    found = page_links(tree, response.final_url, texts=False)
    urls = found.followed(follow_nofollow=settings.follow_nofollow)
    metrics.links_parsed(found.skipped, time.thread_time() - started)
    printed = text_fingerprint(tree) if fingerprint else None
    cap = settings.max_links_per_page
    if len(urls) <= cap:
        return FoundLinks(tuple(urls), 0, printed)
    over = len(urls) - cap
    log.warning("%s has %d links to follow; the first %d go to the frontier, %d over "
                "DUALPLANE_FETCH_MAX_LINKS_PER_PAGE are left out",
                response.final_url, len(urls), cap, over)  # fmt: skip
    metrics.LINKS_OVER_LIMIT.inc(over)
    return FoundLinks(tuple(urls[:cap]), over, printed)
