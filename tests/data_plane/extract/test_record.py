"""The page record as a whole: schema versions, determinism, and pages that are broken or not HTML."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from dualplane import schemas
from dualplane.data_plane.extract.exceptions import ExtractError, ExtractionFailed
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import EXTRACTOR_VERSION, extract_record

pytestmark = pytest.mark.unit

FETCHED_AT = datetime(2024, 6, 1, 12, 30, 45, 123000, tzinfo=UTC)
URL = "https://news.example/story?id=7&utm_source=feed"
PAGE = b"""<!DOCTYPE html><html lang="en-us"><head><title>  A   story </title>
<meta name="description" content="What happened.">
<link rel="canonical" href="/story?id=7">
<script type="application/ld+json">{"@type": "Product", "name": "Lamp", "gtin13": "4006381333931",
"offers": {"price": "19.90", "priceCurrency": "EUR", "availability": "InStock"}}</script></head>
<body><main><h1>Lamp</h1><p>A fine lamp for reading at night, with a warm light and a heavy base.</p>
<a href="/a">A</a> <a href="https://other.example/" rel="ugc">forum</a> <a href="/b" rel="nofollow">B</a>
</main>
</body></html>"""


def page(content: bytes = PAGE, **fields: Any) -> dict[str, Any]:
    """A raw page of ``content`` with ``fields`` replaced (``body`` among them: a body of another type)."""
    return {**raw_page(content, URL, fetched_at=FETCHED_AT, charset="utf-8"), **fields}


def test_a_record_carries_the_envelope_and_the_page_head() -> None:
    record = extract_record(page())

    assert record["url"] == record["final_url"] == URL
    assert record["canonical_url"] == "https://news.example/story?id=7"
    assert (record["domain"], record["status"], record["content_type"]) == ("news.example", 200, "text/html")
    assert (record["extractor_version"], record["schema_version"]) == (EXTRACTOR_VERSION, 1)
    assert (record["title"], record["description"], record["language"]) == (
        "A story",
        "What happened.",
        "en-US",
    )
    assert record["fetched_at"] == record["extracted_at"] == FETCHED_AT


def test_links_are_absolute_and_ugc_counts_as_nofollow() -> None:
    links = {link["url"]: link for link in extract_record(page())["links"]}

    assert list(links) == ["https://news.example/a", "https://other.example/", "https://news.example/b"]
    assert [link["nofollow"] for link in links.values()] == [False, True, True]
    assert links["https://other.example/"] == {
        "url": "https://other.example/", "rel": "ugc", "nofollow": True, "text": "forum",
    }  # fmt: skip


def test_links_are_read_before_the_markup_heuristics_prune_the_tree() -> None:
    # One parse serves both: links inside what Markup drops (struck-through prices, noscript) stay.
    html = b"<body><del><a href='/was'>was</a></del><noscript><a href='/ns'>ns</a></noscript><s>x</s></body>"

    links = [link["url"] for link in extract_record(page(html))["links"]]

    assert links == ["https://news.example/was", "https://news.example/ns"]


@pytest.mark.parametrize("version", [1, 2])
def test_both_schema_versions_encode(version: int) -> None:
    record = extract_record(page(), schema_version=version)

    decoded = schemas.decode(schemas.encode("page_record", record, version))

    assert decoded.version == version and decoded.record["product"]["price"] == record["product"]["price"]
    assert ("word_count" in record, "gtin" in record["product"]) == (version == 2, version == 2)
    if version == 2:
        assert record["product"]["gtin"] == "4006381333931" and record["word_count"] == len(
            record["text"].split()
        )


def test_replaying_a_page_gives_byte_identical_records() -> None:
    first = schemas.encode("page_record", extract_record(page(), schema_version=2), 2)
    second = schemas.encode("page_record", extract_record(page(), schema_version=2), 2)

    assert first == second


def test_extracted_at_defaults_to_fetched_at_and_can_be_given() -> None:
    stamped = datetime(2025, 1, 1, tzinfo=UTC)

    assert extract_record(page())["extracted_at"] == FETCHED_AT
    assert extract_record(page(), extracted_at=stamped)["extracted_at"] == stamped
    assert extract_record(page(fetched_at=1717245045123))["fetched_at"] == FETCHED_AT  # epoch ms


def test_a_canonical_on_another_host_is_not_trusted() -> None:
    body = PAGE.replace(b'href="/story?id=7"', b'href="https://spam.example/"')

    assert extract_record(page(body))["canonical_url"] == "https://news.example/story?id=7"  # tracking cut


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (b"", {}),
        (b"   \n", {}),
        (b"<html><head><title>Hi</ti<body><p>unclosed <div><table><tr><td>", {}),
        (b"<html><body>\x00\x01<p>nul bytes</p>\x00</body></html>", {}),
        (bytes(range(256)) * 20, {}),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00", {"content_type": "image/png"}),
        (b"%PDF-1.7\n\x00\xff", {"content_type": None, "charset": None}),
        (b'{"json": true}', {"content_type": "application/json"}),
        (b"<html><title>x</title></html>", {"charset": "no-such-charset"}),
        (b'<?xml version="1.0" encoding="utf-8"?><html><body><p>xhtml</p></body></html>', {}),
    ],
    ids=[
        "empty",
        "blank",
        "broken",
        "nul",
        "garbage",
        "png",
        "pdf-untyped",
        "json",
        "bad-charset",
        "xml-decl",
    ],
)
def test_broken_empty_and_non_html_pages_still_give_valid_records(
    body: bytes, fields: dict[str, Any]
) -> None:
    record = extract_record(page(body, **fields), schema_version=2)

    schemas.encode("page_record", record, 2)
    assert record["product"] is None and record["article"] is None


def test_plain_text_is_kept_and_its_language_detected() -> None:
    text = (
        "Dies ist ein kurzer Text auf Deutsch, der nur zum Testen der Spracherkennung geschrieben wurde. " * 3
    )

    record = extract_record(page(text.encode(), content_type="text/plain"))

    assert record["text"] == text.strip() and record["language"] == "de" and record["links"] == []


def test_a_legacy_encoding_is_decoded_by_its_declaration() -> None:
    body = "<html><head><meta charset='windows-1252'><title>Café crème</title></head></html>".encode("cp1252")

    assert extract_record(page(body, charset=None))["title"] == "Café crème"


def test_a_saved_page_re_encoded_to_utf8_under_its_old_meta_charset_reads_right() -> None:
    # What `dualplane extract` meets in saved pages: a tool re-encoded the file, the <meta> stayed.
    html = "<html><head><meta charset='iso-8859-1'><title>Herbstprüfung</title></head><body>"
    body = (html + "<p>Straße</p></body></html>").encode()

    record = extract_record(page(body, charset=None))

    assert record["title"] == "Herbstprüfung"


def test_the_language_header_counts_when_the_page_declares_none() -> None:
    body = b"<html><body><p>Bonjour</p></body></html>"

    assert extract_record(page(body, headers={"content-language": "fr-CA, en"}))["language"] == "fr-CA"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"job_id": None}, "lacks raw_page field(s) job_id"),
        ({"body": "text"}, "has a str body"),
        ({"body": b"", "claim_check": "s3://pages/1"}, "keeps its body at s3://pages/1"),
        ({"fetched_at": "yesterday"}, "expected a datetime or epoch ms"),
        ({"body": b"<div>" * 6000}, "nests block elements 6000 deep"),
    ],
)
def test_unusable_pages_fail_with_a_reason(fields: dict[str, Any], reason: str) -> None:
    with pytest.raises(ExtractionFailed, match=re.escape(reason)) as failure:
        extract_record(page(**fields))
    assert reason in failure.value.reason


def test_an_unknown_schema_version_is_a_caller_error_not_a_bad_page() -> None:
    with pytest.raises(ExtractError, match="not 4") as failure:
        extract_record(page(), schema_version=4)
    assert not isinstance(failure.value, ExtractionFailed)


def test_credentials_never_reach_a_record() -> None:
    """A probe's finding: ``user:pass@`` stayed in record URLs (from the page, a redirect or a link)."""
    body = b'<html><body><a href="http://bob:hunter2@other.example/x">x</a><a href="/y">y</a></body></html>'
    secret_url = "https://alice:s3cret@news.example/story"
    record = extract_record(page(body, url=secret_url, final_url=secret_url + "?r=1"))

    assert record["url"] == "https://news.example/story"
    assert record["final_url"] == "https://news.example/story?r=1"
    assert record["canonical_url"] == "https://news.example/story?r=1"
    assert [link["url"] for link in record["links"]] == ["http://other.example/x", "https://news.example/y"]
    assert "s3cret" not in repr(record) and "hunter2" not in repr(record)
