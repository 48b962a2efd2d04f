"""Products from the state JSON pages embed for their scripts (Next.js, Redux, Shopify)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dualplane.data_plane.extract.product.embedded_state import embedded_product

pytestmark = pytest.mark.unit

NEXT_DATA = """<html><body><div id="__next"></div><script id="__NEXT_DATA__" type="application/json">
{"props": {"pageProps": {"product": {"name": "Trail Shoe X2", "sku": "TS-X2-44",
 "price": {"value": 129.5, "currency": "EUR"}, "inStock": false,
 "related": [{"name": "Sock", "sku": "S-1", "price": 5, "currency": "EUR", "inStock": true}]}}}}
</script></body></html>"""

SHOPIFY_META = """<html><head><script>var meta = {"product":{"id":1553,"vendor":"Happy Coffee",
"variants":[{"id":146,"price":2790,"name":"Sidamo - 1KG","sku":"TL-4COA-V28E"},
{"id":147,"price":1690,"name":"Sidamo - 500G","sku":"K3-J7J"}]}};</script></head><body></body></html>"""

REDUX = """<script>window.__INITIAL_STATE__ = {"pdp": {"item": {"title": "Linen Shirt",
"currentPrice": "49.00", "currencyCode": "usd", "stockStatus": "OutOfStock"}}};</script>"""


def test_next_data_product_is_the_one_named_like_the_page() -> None:
    found = embedded_product(NEXT_DATA, "Trail Shoe X2")
    assert (found.price, found.currency, found.sku, found.availability) == (
        Decimal("129.5000"),
        "EUR",
        "TS-X2-44",
        "out_of_stock",
    )
    assert found.source_of("sku") == "embedded-json"


def test_shopify_prices_are_in_cents_and_the_first_variant_is_the_selected_one() -> None:
    found = embedded_product(SHOPIFY_META, "Sidamo")
    assert (found.price, found.sku) == (Decimal("27.9000"), "TL-4COA-V28E")


def test_redux_state_assigned_in_a_script() -> None:
    found = embedded_product(REDUX, "Linen Shirt")
    assert (found.price, found.currency, found.availability) == (Decimal("49.0000"), "USD", "out_of_stock")


@pytest.mark.parametrize(
    "html",
    [
        "<html><body><p>No state here</p></body></html>",
        '<script id="__NEXT_DATA__">{"props": {"pageProps": {"title": "About us"}}}</script>',
        '<script id="__NEXT_DATA__" type="application/json">{not json</script>',
    ],
)
def test_pages_without_a_product_in_their_state(html: str) -> None:
    assert embedded_product(html, None).empty
