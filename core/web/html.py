"""Cheap looks at a body before an HTML parser gets it: is it HTML at all, and how deep it nests.

The fetcher asks both before it parses a page's links, the extractor (with its own copy in
``data_plane.extract.source``) before it extracts: Lexbor, like every HTML5 parser, takes time
quadratic in how deep block elements nest (50,000 unclosed ``<div>`` took 8 s), so a page nested
beyond :data:`MAX_NESTING` is not parsed.
"""

from __future__ import annotations

import itertools
import re

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})
SNIFF_BYTES = 1024
MAX_NESTING = 5000
"""Deeper nesting of block elements is not parsed (the extractor dead-letters such a page)."""

_HTML_START = re.compile(
    rb"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|meta|title)\b", re.IGNORECASE | re.DOTALL
)
_NESTING_TAG = re.compile(
    rb"<(/?)(?:div|ul|ol|dl|section|article|aside|nav|header|footer|main|blockquote|form|fieldset|figure"
    rb"|center|details|menu|table)[\s>/]",
    re.IGNORECASE,
)


def is_html(content_type: str | None, body: bytes) -> bool:
    """Whether a body served as ``content_type`` (a media type, parameters allowed) is HTML: by its
    type, or, for a missing or generic type, by how it starts (a BOM-less ``<!doctype html>``...)."""
    media_type = (content_type or "").split(";")[0].strip().lower()
    if media_type in HTML_TYPES:
        return True
    return media_type in GENERIC_TYPES and _HTML_START.match(body[:SNIFF_BYTES]) is not None


def too_deep(body: bytes) -> int | None:
    """How deep ``body``'s block elements nest (an estimate from start and end tags) when that is
    beyond :data:`MAX_NESTING`, else None."""
    if body.count(b"<") <= MAX_NESTING:
        return None  # too few tags to nest that deep: no need to scan (most pages)
    marks = _NESTING_TAG.findall(body)
    depth = max(itertools.accumulate(-1 if closing else 1 for closing in marks), default=0)
    return depth if depth > MAX_NESTING else None
