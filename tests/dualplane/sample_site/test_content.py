"""The sample site's content without HTTP: determinism, markup variants, truth, robots, reachability."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from decimal import Decimal
from html import unescape
from typing import Any
from urllib.parse import urlsplit

import pytest
from protego import Protego

from dualplane.sample_site import (
    ProductTruth,
    SampleSite,
    SampleSiteError,
    SiteModel,
    SiteSpec,
    explore,
    ground_truth,
    reachable_urls,
)
from dualplane.sample_site.content import Catalog
from dualplane.sample_site.site_pages import sitemap_paths

pytestmark = pytest.mark.unit

SPEC = SiteSpec(seed=7, hosts=3, pages_per_host=40, base_port=8101)
SAMPLE_PATHS = ["/", "/products?page=1", "/articles?page=2", "/robots.txt", "/sitemap.xml", "/nowhere"]


def _page(model: SiteModel, url: str) -> str:
    parts = urlsplit(url)
    response = model.resolve(parts.port - SPEC.base_port if parts.port else 0, parts.path, parts.query)
    assert response.status == 200, url
    return response.body.decode()


def _digest(spec: SiteSpec) -> str:
    model, catalog, digest = SiteModel(spec), Catalog(spec), hashlib.sha256()
    for host in range(spec.hosts):
        paths = [*SAMPLE_PATHS]
        paths += [catalog.product(host, i).path for i in range(catalog.product_count(host))]
        paths += [catalog.article(host, i).path for i in range(catalog.article_count(host))]
        for path_qs in paths:
            path, _, query = path_qs.partition("?")
            digest.update(model.resolve(host, path, query).body)
    return digest.hexdigest()


def test_same_seed_renders_byte_identical_pages_in_another_process() -> None:
    code = (
        "from dualplane.sample_site import SiteSpec\n"
        "from tests.dualplane.sample_site.test_content import _digest\n"
        "print(_digest(SiteSpec(seed=7, hosts=3, pages_per_host=40, base_port=8101)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)

    assert other.stdout.strip() == _digest(SPEC)
    assert _digest(SiteSpec(seed=8, hosts=3, pages_per_host=40, base_port=8101)) != _digest(SPEC)


def test_every_host_kind_and_markup_variant_is_present() -> None:
    truth = ground_truth(SPEC)
    model = SiteModel(SPEC)

    assert [SPEC.kind(host) for host in range(3)] == ["shop", "news", "mixed"]
    assert {p.markup for p in truth.products} == {"json-ld", "microdata", "plain"}
    assert {a.markup for a in truth.articles} == {"json-ld", "markup"}
    pages = {p.markup: _page(model, p.url) for p in truth.products}
    assert '"@type": "Product"' in pages["json-ld"]
    assert 'itemtype="https://schema.org/Product"' in pages["microdata"]
    assert "application/ld+json" not in pages["plain"] and "itemprop" not in pages["plain"]
    for html in pages.values():
        assert 'property="og:title"' in html and 'rel="canonical"' in html
        assert 'id="cookie-banner"' in html and '<footer class="site-footer">' in html
    assert len(truth.products) == 40 + 20 and len(truth.articles) == 40 + 20


def test_visible_prices_use_several_realistic_formats() -> None:
    model = SiteModel(SiteSpec(pages_per_host=200, hosts=1, base_port=8101))
    html = "".join(_page_text(model, i) for i in range(0, 200, 3))
    prices = re.findall(r'<span class="price">([^<]+)</span>', html)

    assert any(re.fullmatch(r"€\d{1,3}(,\d{3})+\.\d\d", p) for p in prices)  # €1,299.00
    assert any(re.fullmatch(r"\d{1,3}(\.\d{3})*,\d\d\u00a0€", p) for p in prices)  # 1.299,00 €
    assert any(p.startswith("$") for p in prices) and any(p.startswith("£") for p in prices)
    for phrase in ("In stock", "Out of stock", "left"):
        assert phrase in html


def _page_text(model: SiteModel, index: int) -> str:
    product = model.catalog.product(0, index)
    return model.resolve(0, product.path).body.decode()


def test_truth_matches_what_each_page_says() -> None:
    model = SiteModel(SPEC)
    truth = ground_truth(SPEC)

    for product in truth.products:
        assert _extract_product(_page(model, product.url), product.markup) == product
    for article in truth.articles:
        html = _page(model, article.url)
        assert f'<h1 class="headline">{article.headline}</h1>' in unescape(html)
        assert f'datetime="{article.published_at}"' in html
        assert all(author in unescape(html) for author in article.authors)
        paragraphs = [unescape(p) for p in re.findall(r"<p>([^<]*)</p>", html)]
        assert article.body == "\n\n".join(p for p in paragraphs if p in article.body)
        if article.markup == "json-ld":
            data = _json_ld(html)[0]
            assert data["headline"] == article.headline and data["datePublished"] == article.published_at
            assert [a["name"] for a in data["author"]] == list(article.authors)


def _json_ld(html: str) -> list[dict[str, Any]]:
    blocks = re.findall(r'<script type="application/ld\+json">(.*?)</script>', html, re.S)
    return [json.loads(block) for block in blocks]


def _extract_product(html: str, markup: str) -> ProductTruth:
    """A deliberately small extractor: enough to prove the page carries every truth field."""
    url = re.search(r'<link rel="canonical" href="([^"]+)">', html)
    name = re.search(r'<h1 class="product-title"[^>]*>([^<]+)</h1>', html)
    assert url and name
    if markup == "json-ld":
        data = _json_ld(html)[0]
        offer = data["offers"]
        assert isinstance(offer, dict)
        price, currency, availability = offer["price"], offer["priceCurrency"], offer["availability"]
        sku = str(data["sku"])
    elif markup == "microdata":
        price = _group(r'itemprop="price" content="([^"]+)"', html)
        currency = _group(r'itemprop="priceCurrency" content="([^"]+)"', html)
        availability = _group(r'itemprop="availability" href="([^"]+)"', html)
        sku = _group(r'itemprop="sku">([^<]+)<', html)
    else:
        price, currency = _parse_price(unescape(_group(r'<span class="price">([^<]+)</span>', html)))
        availability = _availability(_group(r'<p class="stock [^"]+">([^<]+)</p>', html))
        sku = _group(r'<span class="sku">([^<]+)</span>', html)
    return ProductTruth(
        unescape(url.group(1)),
        unescape(name.group(1)),
        sku,
        str(price),
        str(currency),
        str(availability),
        markup,
    )


def _group(pattern: str, html: str) -> str:
    match = re.search(pattern, html)
    assert match, pattern
    return match.group(1)


def _parse_price(text: str) -> tuple[str, str]:
    symbols = {"€": "EUR", "$": "USD", "£": "GBP"}
    currency = next(code for symbol, code in symbols.items() if symbol in text)
    digits = text.strip("€$£\u00a0 ")
    if digits[-3] == ",":  # 1.299,00
        digits = digits.replace(".", "").replace(",", ".")
    return str(Decimal(digits.replace(",", ""))), currency


def _availability(phrase: str) -> str:
    if phrase.startswith("Only"):
        return "https://schema.org/LimitedAvailability"
    names = {"In stock": "InStock", "Out of stock": "OutOfStock", "Available for pre-order": "PreOrder"}
    return f"https://schema.org/{names[phrase]}"


def test_robots_disallows_private_and_points_at_the_sitemap() -> None:
    robots = _page(SiteModel(SPEC), "http://127.0.0.1:8102/robots.txt")

    assert "User-agent: *\nDisallow: /private/\n" in robots
    assert "Sitemap: http://127.0.0.1:8102/sitemap.xml" in robots
    assert "Crawl-delay" not in robots


def test_robots_asks_for_the_specs_crawl_delay_as_protego_reads_it() -> None:
    robots = _page(SiteModel(replace(SPEC, crawl_delay_s=15)), "http://127.0.0.1:8102/robots.txt")

    assert Protego.parse(robots).crawl_delay("dualplane") == 15.0
    with pytest.raises(SampleSiteError, match="crawl_delay_s"):
        replace(SPEC, crawl_delay_s=0)


def test_reachability_skips_private_404s_and_redirect_sources() -> None:
    walk = explore(SPEC)
    origin = SPEC.origin(0)

    assert f"{origin}/private/account" in walk.disallowed
    assert not any("/private/" in url for url in walk.pages)
    assert {f"{origin}/careers", f"{origin}/product/discontinued-0"} <= walk.broken
    assert walk.redirects[f"{origin}/old/shop"] == f"{origin}/shop"
    assert walk.redirects[f"{origin}/shop"] == f"{origin}/products?page=1"  # a chain of two
    assert not walk.pages & set(walk.redirects)
    assert set(walk.redirects.values()) - set(walk.redirects) <= walk.pages
    assert all(url in walk.pages for url in ground_truth(SPEC).by_url())


def test_reachable_urls_are_exactly_the_sitemaps() -> None:
    catalog = Catalog(SPEC)
    sitemaps = {SPEC.origin(h) + path for h in range(SPEC.hosts) for path, _ in sitemap_paths(catalog, h)}

    assert reachable_urls(SPEC) == sitemaps


def test_unknown_ports_and_bad_specs_are_explained() -> None:
    with pytest.raises(SampleSiteError, match="base_port=0"):
        ground_truth(SiteSpec())
    with pytest.raises(SampleSiteError, match="not been started"):
        SampleSite().stats()
    with pytest.raises(SampleSiteError, match="pages_per_host"):
        SiteSpec(pages_per_host=0)
