"""Control characters lxml refuses are dropped from a decoded body whatever its codec: searched for in
the bytes where bytes 0-127 read as ASCII, in the text where they do not."""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.source import read_source

pytestmark = pytest.mark.unit

TEXT = "<html><body>Caf\u00e9\x00 \x1bau\x7f lait\ttab\r\nline\x0cend</body></html>"


@pytest.mark.parametrize("codec", ["utf-8", "windows-1252", "shift_jis", "koi8-r", "utf-16-le", "cp037"])
def test_control_characters_are_dropped_and_the_rest_kept(codec: str) -> None:
    expected = TEXT.translate(dict.fromkeys([0x00, 0x1B, 0x7F, 0x0C]))
    assert read_source(TEXT.encode(codec, "replace"), "text/html", codec).text == expected.encode(
        codec, "replace"
    ).decode(codec)


@pytest.mark.parametrize("codec", ["utf-8", "windows-1252", "utf-16-le", "cp037"])
def test_a_body_without_control_characters_is_kept_whole(codec: str) -> None:
    clean = "<html><body>Caf\u00e9 au lait\ttab\r\nline</body></html>"
    assert read_source(clean.encode(codec), "text/html", codec).text == clean


def test_a_codec_that_does_not_read_ascii_bytes_as_ascii_has_its_text_searched() -> None:
    # In EBCDIC the escape character is the byte of an apostrophe in ASCII: no control byte betrays it.
    body = "<html><body>a\x1bb</body></html>".encode("cp037")
    assert read_source(body, "text/html", "cp037").text == "<html><body>ab</body></html>"
