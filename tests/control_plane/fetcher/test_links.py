"""The links a fetched page hands to the frontier: HTML 2xx only, nofollow respected, the cap counted."""

from __future__ import annotations

import asyncio
import logging

import pytest
from prometheus_client import REGISTRY

from dualplane.control_plane.fetcher.backends.base import FetchResponse
from dualplane.control_plane.fetcher.links import INLINE_PARSE_MAX_BYTES, links_of, parse_links
from dualplane.core.settings import FetchSettings

pytestmark = pytest.mark.unit

PAGE = "https://shop.example/dir/page"


def _response(
    body: bytes, content_type: str | None = "text/html", status: int = 200, charset: str | None = "utf-8"
) -> FetchResponse:
    return FetchResponse(PAGE, PAGE, status, {}, body, (), 1.0, content_type, charset)


def _over_limit() -> float:
    return REGISTRY.get_sample_value("dualplane_fetch_links_over_limit_total") or 0.0


def test_a_page_with_2100_links_hands_on_2000_and_counts_and_logs_the_100_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = "".join(f'<a href="/p/{n}">{n}</a>' for n in range(2100)).encode()
    before = _over_limit()

    with caplog.at_level(logging.WARNING, logger="dualplane.control_plane.fetcher.links"):
        found = parse_links(_response(body), FetchSettings())

    assert found.urls == tuple(f"https://shop.example/p/{n}" for n in range(2000))
    assert found.over_limit == 100
    assert _over_limit() - before == 100
    assert [r.getMessage() for r in caplog.records if "MAX_LINKS_PER_PAGE" in r.getMessage()] == [
        f"{PAGE} has 2100 links to follow; the first 2000 go to the frontier, 100 over "
        "DUALPLANE_FETCH_MAX_LINKS_PER_PAGE are left out"
    ]


def test_the_cap_is_a_setting() -> None:
    body = b'<a href="/a">a</a><a href="/b">b</a><a href="/c">c</a>'

    found = parse_links(_response(body), FetchSettings(max_links_per_page=2))

    assert (len(found.urls), found.over_limit) == (2, 1)


def test_nofollow_links_stay_behind_unless_followed_on_purpose() -> None:
    body = b'<a href="/a">a</a><a href="/b" rel="nofollow">b</a><a href="/c" rel="sponsored">c</a>'

    assert parse_links(_response(body), FetchSettings()).urls == ("https://shop.example/a",)
    assert len(parse_links(_response(body), FetchSettings(follow_nofollow=True)).urls) == 3


def test_a_robots_meta_nofollow_page_hands_on_nothing() -> None:
    body = b'<meta name="robots" content="nofollow"><a href="/a">a</a>'

    assert parse_links(_response(body), FetchSettings()).urls == ()


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        ("application/json", b'{"a": "<a href=\\"/x\\">"}', 0),
        ("image/png", b'<a href="/x">', 0),
        (None, b'<!doctype html><a href="/x">x</a>', 1),
        ("application/octet-stream", b'<html><a href="/x">x</a>', 1),
        (None, b'plain text <a href="/x">', 0),
        ("application/xhtml+xml", b'<html><a href="/x">x</a></html>', 1),
    ],
)
def test_only_html_bodies_are_parsed(content_type: str | None, body: bytes, expected: int) -> None:
    assert len(parse_links(_response(body, content_type), FetchSettings()).urls) == expected


def test_a_legacy_charset_is_decoded_before_parsing() -> None:
    body = '<a href="/caf\u00e9">x</a>'.encode("cp1252")

    found = parse_links(_response(body, charset="cp1252"), FetchSettings())

    assert found.urls == ("https://shop.example/caf\u00e9",)


def test_error_pages_and_empty_bodies_hand_on_nothing() -> None:
    body = b'<a href="/a">a</a>'

    assert asyncio.run(links_of(_response(body, status=404), FetchSettings())).urls == ()
    assert asyncio.run(links_of(_response(b""), FetchSettings())).urls == ()


def test_a_large_page_is_parsed_off_the_event_loop_with_the_same_result() -> None:
    filler = b"<p>" + b"word " * 200 + b"</p>"
    body = b'<a href="/first">f</a>' + filler * (INLINE_PARSE_MAX_BYTES // len(filler) + 1)

    found = asyncio.run(links_of(_response(body), FetchSettings()))

    assert found.urls == ("https://shop.example/first",)


def test_a_page_nested_too_deep_is_not_parsed() -> None:
    body = b"<div>" * 6000 + b'<a href="/x">x</a>'

    assert parse_links(_response(body), FetchSettings()).urls == ()
