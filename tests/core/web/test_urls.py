"""URL canonicalization, politeness keys and dedup keys."""

from __future__ import annotations

import re

import pytest

from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import DEFAULT_TRACKING_PARAMS, KEY_BYTES, canonicalize, domain_of, url_key

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Example.COM", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("http://example.com:443/a", "http://example.com:443/a"),
        ("http://example.com/a#section-2", "http://example.com/a"),
        ("http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"),
        ("http://example.com/a%7eb?x=%41", "http://example.com/a~b?x=A"),
        ("http://example.com./", "http://example.com/"),
        ("http://bücher.de/straße?q=ä", "http://xn--bcher-kva.de/stra%C3%9Fe?q=%C3%A4"),
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("  https://example.com/x  ", "https://example.com/x"),
        ("http://user:PW@Example.com:8080", "http://example.com:8080/"),  # credentials never kept
    ],
)
def test_canonical_form(raw: str, canonical: str) -> None:
    assert canonicalize(raw) == canonical


def test_tracking_parameters_are_stripped_case_insensitively_and_by_prefix() -> None:
    raw = "https://shop.example/item?id=7&UTM_Source=news&utm_whatever=1&gclid=x&FBCLID=y&_ga=1&ref_src=tw"

    assert canonicalize(raw) == "https://shop.example/item?id=7"
    assert canonicalize("https://shop.example/?utm_source=x") == "https://shop.example/"
    assert canonicalize("https://shop.example/?utm%5Fmedium=x&page=2") == "https://shop.example/?page=2"


def test_strip_params_can_be_replaced_or_disabled() -> None:
    raw = "https://example.com/?utm_source=x&session=abc&page=2"

    assert canonicalize(raw, strip_params=()) == "https://example.com/?page=2&session=abc&utm_source=x"
    assert canonicalize(raw, strip_params={"Session"}) == "https://example.com/?page=2&utm_source=x"
    assert canonicalize(raw, strip_params={"s*"}) == "https://example.com/?page=2&utm_source=x"


def test_default_tracking_params_name_the_common_click_ids() -> None:
    assert {
        "utm_source",
        "gclid",
        "fbclid",
        "msclkid",
        "mc_cid",
        "yclid",
        "igshid",
    } <= DEFAULT_TRACKING_PARAMS


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("ftp://x", "not an http(s) URL: 'ftp://x'"),
        ("mailto:a@example.com", "not an http(s) URL"),
        ("//example.com/a", "not an http(s) URL"),
        ("javascript:void(0)", "not an http(s) URL"),
        ("http:///path", "URL has no host: 'http:///path'"),
        ("https://", "URL has no host"),
        ("http://[::1", "unparseable URL 'http://[::1'"),
        ("http://example.com:99999/", "unparseable URL"),
        ("http://exa mple.com/", "invalid host"),
    ],
)
def test_invalid_urls_raise_a_readable_error(raw: str, message: str) -> None:
    with pytest.raises(InvalidUrl, match=re.escape(message)):
        canonicalize(raw)


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("http://127.0.0.1:8101/page", "127.0.0.1:8101"),
        ("https://Example.com/", "example.com"),
        ("https://example.com:443/", "example.com"),
        ("http://example.com:443/", "example.com:443"),
        ("http://Shop.Example.com.:8080/x", "shop.example.com:8080"),
        ("http://bücher.de/", "xn--bcher-kva.de"),
        ("http://[::1]:8080/", "[::1]:8080"),
    ],
)
def test_domain_of(url: str, domain: str) -> None:
    assert domain_of(url) == domain


def test_domain_of_rejects_what_canonicalize_rejects() -> None:
    with pytest.raises(InvalidUrl, match="not an http"):
        domain_of("ftp://example.com/")


def test_url_key_is_a_stable_16_byte_digest() -> None:
    key = url_key("https://example.com/")

    assert len(key) == KEY_BYTES == 16
    assert key == url_key("https://example.com/")
    assert key != url_key("https://example.com/a")


def test_variants_of_10000_urls_collapse_to_10000_keys() -> None:
    keys: set[bytes] = set()
    for i in range(10_000):
        base = f"https://site{i % 97}.example/path/{i}"
        args = [f"a{j}={i * 10 + j}" for j in range(2)]
        variants = [
            f"{base}?{'&'.join(args)}",
            f"{base}?{'&'.join(args)}#frag-{i}",
            f"{base}?{'&'.join(args)}&utm_source=mail&gclid={i}",
            f"{base.upper().replace('/PATH/', '/path/')}?{'&'.join(reversed(args))}",
        ]
        keys.update(url_key(canonicalize(variant)) for variant in variants)

    assert len(keys) == 10_000
