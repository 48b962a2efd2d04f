"""A page's links for its record: :func:`core.web.links.page_links` (shared with the fetcher, which
hands them to the frontier), with the anchors left out for their scheme counted here
(``dualplane_extract_skipped_links_total``)."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from dualplane.core.web.links import CRAWLABLE_SCHEMES, MAX_TEXT_CHARS, Link, page_links
from dualplane.data_plane.extract import metrics

__all__ = ["CRAWLABLE_SCHEMES", "MAX_TEXT_CHARS", "Link", "extract_links"]


def extract_links(html: str | LexborHTMLParser, page_url: str) -> list[Link]:
    """Every crawlable ``<a href>`` of ``html`` (or of its parsed tree) resolved against ``page_url``
    (or ``<base href>``), with its anchor text."""
    found = page_links(html, page_url)
    for scheme, anchors in found.skipped.items():
        for _ in range(anchors):
            metrics.skipped_link(scheme)
    return found.links
