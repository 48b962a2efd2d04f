"""What extraction cannot keep is counted, never dropped in silence: bytes invalid in the declared
charset (a probe found them turned into U+FFFD with no trace) and links that cannot be crawled
(``javascript:``, ``mailto:``, ``data:`` links were left out uncounted)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY

from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record
from dualplane.data_plane.extract.source import read_source

pytestmark = pytest.mark.unit

URL = "https://shop.example/p"


def page(body: bytes) -> dict[str, Any]:
    return raw_page(body, URL, fetched_at=datetime(2024, 6, 1, tzinfo=UTC), charset="utf-8")


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_bytes_invalid_in_the_declared_charset_are_counted_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Latin-1 bytes (é = 0xE9, ü = 0xFC) on a page that says it is UTF-8: a lying charset.
    body = "<html><title>Café Müller</title><body><p>Ein Text.</p></body></html>".encode("latin-1")
    pages, chars = (
        _value("dualplane_extract_lossy_decodes_total"),
        _value("dualplane_extract_replaced_characters_total"),
    )

    with caplog.at_level(logging.WARNING, logger="dualplane.data_plane.extract.record"):
        record = extract_record(page(body))

    assert record["title"] == "Caf\ufffd M\ufffdller"  # still extracted, the loss visible in the text
    assert _value("dualplane_extract_lossy_decodes_total") == pages + 1
    assert _value("dualplane_extract_replaced_characters_total") == chars + 2
    assert f"{URL}: 2 character(s) invalid in utf-8 became U+FFFD" in caplog.text


def test_a_clean_decode_counts_nothing_even_with_real_replacement_characters() -> None:
    body = "<p>a real \ufffd in the page, and ünïcödé</p>".encode()
    pages = _value("dualplane_extract_lossy_decodes_total")

    source = read_source(body, "text/html", "utf-8")
    extract_record(page(body))

    assert source.replaced == 0 and "\ufffd" in source.text
    assert _value("dualplane_extract_lossy_decodes_total") == pages


def test_only_made_up_replacement_characters_are_counted() -> None:
    body = "real \ufffd".encode() + b" bad \xff\xfe"

    assert read_source(body, "text/plain", "utf-8").replaced == 2


def test_uncrawlable_links_are_counted_by_scheme() -> None:
    links = (
        '<a href="javascript:void(0)">js</a><a href="JavaScript:go()">js</a>'
        '<a href="javascript:void(0)">js</a><a href="mailto:a@b.c">m</a>'
        '<a href="data:text/html,hi">d</a><a href="tel:+1">t</a><a href="gopher://x/">g</a>'
        '<a href="/ok">ok</a>'
    )
    schemes = ("javascript", "mailto", "data", "tel", "other")
    before = {s: _value("dualplane_extract_skipped_links_total", scheme=s) for s in schemes}

    record = extract_record(page(f"<html><body>{links}</body></html>".encode()))

    assert [link["url"] for link in record["links"]] == ["https://shop.example/ok"]
    after = {s: _value("dualplane_extract_skipped_links_total", scheme=s) for s in schemes}
    assert {s: after[s] - before[s] for s in schemes} == {
        "javascript": 3,  # every anchor, a repeated href too
        "mailto": 1,
        "data": 1,
        "tel": 1,
        "other": 1,
    }
