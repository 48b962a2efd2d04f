"""detect_charset: BOM, then the HTTP header, then meta/XML declarations, then a UTF-8 check; valid
UTF-8 with non-ASCII text overrules a legacy label."""

from __future__ import annotations

import codecs

import pytest

from dualplane.core.web.charset import SNIFF_BYTES, detect_charset

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("header", "body", "expected"),
    [
        # The header wins over a meta tag that disagrees.
        ("text/html; charset=ISO-8859-1", b'<meta charset="utf-8"><p>caf\xe9</p>', "cp1252"),
        ("text/html; charset=utf-8", b'<meta charset="windows-1251">', "utf-8"),
        # Without a header charset, the meta tag (both spellings) or XML declaration decides.
        ("text/html", b'<html><head><meta charset="shift_jis"></head>', "cp932"),
        (None, b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">', "koi8-r"),
        (None, b'<?xml version="1.0" encoding="ISO-8859-15"?><urlset/>', "iso8859-15"),
        # A BOM beats both: whoever wrote the file knew its encoding.
        ("text/html; charset=iso-8859-1", codecs.BOM_UTF8 + b"<p>hi</p>", "utf-8"),
        (None, codecs.BOM_UTF16_LE + "<p>hi</p>".encode("utf-16-le"), "utf-16-le"),
        # Unknown or unsafe labels are skipped, never returned.
        ("text/html; charset=bogus", b'<meta charset="koi8-r">', "koi8-r"),
        ("text/html; charset=utf-7", b"plain ascii", "utf-8"),
        # Nothing declared: valid UTF-8 (ASCII included) is UTF-8, anything else cp1252.
        (None, "café ünïcödé".encode(), "utf-8"),
        (None, "café".encode("cp1252"), "cp1252"),
        (None, b"", "utf-8"),
        # Valid UTF-8 with non-ASCII text is UTF-8 under a stale legacy label, header or meta...
        (None, '<meta charset="iso-8859-1"><p>Straße</p>'.encode(), "utf-8"),
        ("text/html; charset=ISO-8859-1", "<p>café</p>".encode(), "utf-8"),
        ("text/html; charset=euc-kr", "<p>대전일보</p>".encode(), "utf-8"),
        # ...but not when the body is ASCII (nothing to tell), nor under a label UTF-8 cannot share
        # bytes with.
        (None, b'<meta charset="koi8-r"><p>plain</p>', "koi8-r"),
        ("text/html; charset=utf-16-le", "<p>é</p>".encode(), "utf-16-le"),
    ],
)
def test_charset_is_taken_from_the_first_source_that_names_one(
    header: str | None, body: bytes, expected: str
) -> None:
    assert detect_charset(header, body) == expected


def test_a_multibyte_character_cut_by_the_sniff_window_is_still_utf8() -> None:
    body = b"a" * (SNIFF_BYTES - 1) + "é".encode() + b"tail"
    assert detect_charset(None, body) == "utf-8"


def test_the_result_always_decodes_the_body() -> None:
    body = b"\x81\x8d\x8f\x90\x9d mixed bytes"
    assert body.decode(detect_charset(None, body), "replace")


def test_a_legacy_label_stands_for_text_that_is_not_utf8() -> None:
    body = '<meta charset="windows-1252"><p>Straße, café</p>'.encode("cp1252")
    assert detect_charset(None, body) == "cp1252"
    assert body.decode(detect_charset(None, body)).endswith("Straße, café</p>")


def test_utf8_seen_only_after_the_sniff_window_leaves_the_label_in_charge() -> None:
    body = b'<meta charset="iso-8859-1">' + b"a" * SNIFF_BYTES + "é".encode()
    assert detect_charset(None, body) == "cp1252"
