"""Which codec decodes a fetched body: byte-order mark, HTTP header, meta tag, then a guess.

The order is the one browsers use (WHATWG encoding sniffing) and w3lib follows: a BOM wins over
the header, because a server's default ``charset=iso-8859-1`` is often wrong while a BOM is
written by whoever saved the file. Labels are mapped the browser way too (latin-1 -> cp1252).
"""

from __future__ import annotations

import codecs

from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

# Guess from this much of the body: a page with non-ASCII text shows it long before 64 KiB.
SNIFF_BYTES = 64 * 1024
# What browsers assume for unlabelled pages that are not valid UTF-8.
FALLBACK = "cp1252"


def detect_charset(content_type_header: str | None, body: bytes) -> str:
    """The Python codec name (``"utf-8"``, ``"cp1252"``, ``"cp932"``…) to decode ``body`` with.

    Tries, in order: a byte-order mark, the ``charset`` of ``content_type_header``, a
    ``<meta charset>`` / ``http-equiv`` / ``<?xml encoding?>`` declaration in the first 4 KiB, and
    finally detection: ``utf-8`` when the first 64 KiB are valid UTF-8 (ASCII included), else cp1252.
    Unknown labels are skipped, never returned.
    """
    bom_encoding, _ = read_bom(body)
    declared = bom_encoding or http_content_type_encoding(content_type_header)
    declared = declared or html_body_declared_encoding(body)
    return codecs.lookup(declared).name if declared else _guess(body)


def _guess(body: bytes) -> str:
    # When the sample is cut, a multi-byte character cut with it is not an error.
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body[:SNIFF_BYTES], final=len(body) <= SNIFF_BYTES)
    except UnicodeDecodeError:
        return FALLBACK
    return "utf-8"
