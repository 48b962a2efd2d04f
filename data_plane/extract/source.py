"""A raw page's body as text: the codec chosen like a browser would, and whether it is HTML at all.

Undecodable bytes never fail a page: they become U+FFFD, and :attr:`Source.replaced` says how many
characters were made up that way (a lying or missing charset), so the loss is counted, not silent.
Control characters other than tab and line breaks are dropped, since lxml (under trafilatura and
extruct) refuses strings that contain them.
"""

from __future__ import annotations

import codecs
import functools
import itertools
import re
from dataclasses import dataclass
from typing import Literal

from dualplane.core.web.charset import detect_charset

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
SNIFF_CHARS = 1024
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
"""The bytes of ``_CONTROL``'s characters: in a codec that reads bytes 0-127 as ASCII, a body without them
decodes to text without those characters, and deleting them from bytes costs a fifth of searching text."""
_ASCII = "".join(map(chr, range(128)))
_HTML_START = re.compile(
    r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|meta|title)\b", re.I | re.S
)

# Block elements that nest without implied end tags: HTML parsers (Lexbor, html5lib) spend time
# quadratic in how deep they nest, so thousands of unclosed <div>s can take minutes.
_NESTING_TAG = re.compile(
    r"<(/?)(?:div|ul|ol|dl|section|article|aside|nav|header|footer|main|blockquote|form|fieldset|figure"
    r"|center|details|menu|table)[\s>/]",
    re.I,
)

Kind = Literal["html", "text", "other"]


@dataclass(frozen=True)
class Source:
    """A decoded body: ``kind`` says how to read ``text`` (``other`` bodies are not read at all)."""

    kind: Kind
    text: str
    codec: str | None
    replaced: int = 0
    """How many U+FFFD the decode put in for bytes invalid in ``codec`` (0: the decode lost nothing)."""


def read_source(body: bytes, content_type: str | None, charset: str | None) -> Source:
    """Decode ``body`` served as ``content_type`` (a media type) with ``charset`` (may be wrong or None).

    HTML is recognised by its media type, or sniffed when the type is missing or generic; any other
    ``text/plain`` is text; everything else (images, PDF, JSON…) is ``other`` and not decoded.
    """
    media_type = (content_type or "").split(";")[0].strip().lower()
    if media_type not in HTML_TYPES and media_type not in TEXT_TYPES and not _generic(media_type):
        return Source("other", "", None)
    codec = _codec(body, media_type, charset)
    decoded, replaced = decode_counting(body, codec)
    text = _CONTROL.sub("", decoded) if _may_hold_controls(body, codec) else decoded
    if media_type in HTML_TYPES or (_generic(media_type) and _HTML_START.match(text[:SNIFF_CHARS])):
        return Source("html", text, codec, replaced)
    if media_type in TEXT_TYPES or (media_type == "" and _looks_textual(body)):
        return Source("text", text, codec, replaced)
    return Source("other", "", None)


def decode_counting(body: bytes, codec: str) -> tuple[str, int]:
    """``body`` decoded with ``codec``, bad bytes as U+FFFD, and how many U+FFFD that made up.

    A strict decode first (the common case, no cost beyond the decode itself); only a body that
    fails it is decoded again, with and without replacement, to tell made-up U+FFFD from real ones.
    """
    try:
        return body.decode(codec), 0
    except UnicodeDecodeError:
        text = body.decode(codec, errors="replace")
        return text, text.count("\ufffd") - body.decode(codec, errors="ignore").count("\ufffd")


def _may_hold_controls(body: bytes, codec: str) -> bool:
    """Whether ``body`` decoded with ``codec`` may hold characters ``_CONTROL`` drops: in a codec that reads
    bytes 0-127 as ASCII (UTF-8, the single-byte and CJK ones) only the bytes of those characters make them;
    in any other (UTF-16, EBCDIC) the text is searched."""
    return not _ascii_identity(codec) or len(body.translate(None, CONTROL_BYTES)) != len(body)


@functools.cache
def _ascii_identity(codec: str) -> bool:
    try:
        return bytes(range(128)).decode(codec) == _ASCII
    except (UnicodeDecodeError, LookupError):
        return False


def _generic(media_type: str) -> bool:
    return media_type in ("", "application/octet-stream", "binary/octet-stream")


def _codec(body: bytes, media_type: str, charset: str | None) -> str:
    header = f"{media_type or 'text/html'}; charset={charset}" if charset else None
    try:
        return codecs.lookup(detect_charset(header, body)).name
    except LookupError:  # a label w3lib knows but this Python lacks: decode as the web's default
        return "utf-8"


def _looks_textual(body: bytes) -> bool:
    sample = body[:SNIFF_CHARS]
    return b"\x00" not in sample


def too_deep(html: str, limit: int) -> int | None:
    """:func:`nesting_depth` of ``html`` when it is beyond ``limit``, else None.

    Each level of nesting needs a start tag, each start tag a ``<``: a page with at most ``limit`` of
    them cannot nest deeper, and counting one character costs a fifth of the tag scan (0.3 against
    1.45 ms on a large page; 93 of the 101 large pages and nearly every smaller one are settled so).
    """
    if html.count("<") <= limit:
        return None
    depth = nesting_depth(html)
    return depth if depth > limit else None


def nesting_depth(html: str) -> int:
    """How deep ``html``'s block elements nest at most, counting start and end tags (an estimate)."""
    marks = _NESTING_TAG.findall(html)
    return max(itertools.accumulate(-1 if closing else 1 for closing in marks), default=0)
