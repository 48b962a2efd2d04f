"""Every markup variant of the sample site's products and articles extracts to its ground truth."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import pytest

from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record
from dualplane.sample_site import ArticleTruth, ProductTruth, SiteModel, SiteSpec, ground_truth

pytestmark = pytest.mark.unit

# No server: pages are rendered in-process, the port only shapes the URLs.
SPEC = SiteSpec(seed=11, hosts=3, pages_per_host=12, base_port=20000)
MODEL = SiteModel(SPEC)
TRUTH = ground_truth(SPEC)
AVAILABILITY = {
    "https://schema.org/InStock": "in_stock",
    "https://schema.org/OutOfStock": "out_of_stock",
    "https://schema.org/LimitedAvailability": "limited",
    "https://schema.org/PreOrder": "preorder",
}


def extract(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    response = MODEL.resolve((parts.port or 0) - SPEC.base_port, parts.path, parts.query)
    assert response.status == 200, f"{url} is not a page of the sample site"
    page = raw_page(response.body, url, fetched_at=datetime(2024, 6, 1, tzinfo=UTC), charset="utf-8")
    return extract_record(page)


def one_of_each(items: tuple[Any, ...]) -> list[Any]:
    """A few items of every markup variant, so each variant is covered without rendering them all."""
    chosen: dict[str, list[Any]] = {}
    for item in items:
        chosen.setdefault(item.markup, [])
        if len(chosen[item.markup]) < 3:
            chosen[item.markup].append(item)
    return [item for group in chosen.values() for item in group]


@pytest.mark.parametrize("truth", one_of_each(TRUTH.products), ids=lambda item: f"{item.markup}-{item.sku}")
def test_product_pages_match_the_truth(truth: ProductTruth) -> None:
    record = extract(truth.url)

    product = record["product"]
    assert product is not None and record["article"] is None
    assert (product["price"], product["currency"]) == (Decimal(truth.price), truth.currency)
    assert product["sku"] == truth.sku
    assert product["name"] == truth.name
    assert product["availability"] == AVAILABILITY[truth.availability]
    assert product["images"] and product["images"][0].startswith("http://127.0.0.1:")


@pytest.mark.parametrize(
    "truth", one_of_each(TRUTH.articles), ids=lambda item: f"{item.markup}-{item.headline}"
)
def test_article_pages_match_the_truth(truth: ArticleTruth) -> None:
    record = extract(truth.url)

    article = record["article"]
    assert article is not None and record["product"] is None
    assert article["headline"] == truth.headline
    assert article["authors"] == list(truth.authors)
    assert article["published_at"] == datetime.fromisoformat(truth.published_at)
    assert article["body"] == truth.body
    assert record["language"] == "en"


@pytest.mark.parametrize("path", ["/", "/products?page=1", "/articles?page=1", "/about"])
def test_home_listing_and_information_pages_are_neither(path: str) -> None:
    mixed_host = SPEC.origin(2)  # the host with both products and articles, so every path exists

    record = extract(mixed_host + path)

    assert record["product"] is None and record["article"] is None


def test_links_and_canonical_url_of_a_product_page() -> None:
    truth = TRUTH.products[0]
    record = extract(truth.url)

    urls = [link["url"] for link in record["links"]]
    assert record["canonical_url"] == truth.url
    assert urls and all(url.startswith("http://127.0.0.1:") for url in urls)
    assert len(urls) == len(set(urls))
    assert record["title"].startswith(truth.name)
