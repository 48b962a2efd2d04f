"""Which codec decodes a fetched body: byte-order mark, HTTP header, meta tag, then a guess.

The order is the one browsers use (WHATWG encoding sniffing) and w3lib follows: a BOM wins over
the header, because a server's default ``charset=iso-8859-1`` is often wrong while a BOM is
written by whoever saved the file. Labels are mapped the browser way too (latin-1 -> cp1252).

One deliberate departure: a body that is valid UTF-8 and holds non-ASCII text is UTF-8, whatever
legacy charset its header or meta tag names. Text in a legacy charset is next to never valid UTF-8
by chance (every non-ASCII byte would have to fall into a UTF-8 sequence), while UTF-8 under a
stale label is common: pages saved or converted by a tool that re-encoded them and kept their
``<meta>``, CMS templates that hard-code ``iso-8859-1``. A browser shows those as mojibake
("StraÃŸe"); a record is for the text the author wrote ("Straße").
"""

from __future__ import annotations

import codecs

from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

# Guess from this much of the body: a page with non-ASCII text shows it long before 64 KiB.
SNIFF_BYTES = 64 * 1024
# What browsers assume for unlabelled pages that are not valid UTF-8.
FALLBACK = "cp1252"
# Declarations that UTF-8 does not overrule: bodies in them are not ASCII-compatible, so their
# bytes say nothing about UTF-8.
_WIDE = frozenset({"utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"})


def detect_charset(content_type_header: str | None, body: bytes) -> str:
    """The Python codec name (``"utf-8"``, ``"cp1252"``, ``"cp932"``…) to decode ``body`` with.

    Tries, in order: a byte-order mark, the ``charset`` of ``content_type_header``, a
    ``<meta charset>`` / ``http-equiv`` / ``<?xml encoding?>`` declaration in the first 4 KiB, and
    finally detection: ``utf-8`` when the first 64 KiB are valid UTF-8 (ASCII included), else cp1252.
    A declared legacy charset gives way to ``utf-8`` when the first 64 KiB are valid UTF-8 with
    non-ASCII text in them (see the module's docstring). Unknown labels are skipped, never returned.
    """
    bom_encoding, _ = read_bom(body)
    if bom_encoding:
        return codecs.lookup(bom_encoding).name
    declared = http_content_type_encoding(content_type_header) or html_body_declared_encoding(body)
    if not declared:
        return "utf-8" if _valid_utf8(body) else FALLBACK
    codec = codecs.lookup(declared).name
    if codec not in _WIDE and not body[:SNIFF_BYTES].isascii() and _valid_utf8(body):
        return "utf-8"
    return codec


def _valid_utf8(body: bytes) -> bool:
    # When the sample is cut, a multi-byte character cut with it is not an error.
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body[:SNIFF_BYTES], final=len(body) <= SNIFF_BYTES)
    except UnicodeDecodeError:
        return False
    return True
