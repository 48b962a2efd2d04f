"""Instalments, per-month amounts and free-shipping thresholds are not the product's price (issue #35)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.other_amounts import without_other_amounts
from dualplane.data_plane.extract.product.prices import parse_price
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/1"


@pytest.mark.parametrize(
    "line",
    ["4 x 25,00 €", "3 \u00d7 $19.99", "or 4 interest-free payments of $12.50 with Afterpay", "$37/mo",
     "$1,929 /mo.", "12,99 € / Monat", "Free shipping on orders over $70!", "Versandkostenfrei ab 29,00 €.",
     "Free Standard Shipping above $35", "Livraison gratuite dès 49 €"],
)  # fmt: skip
def test_an_instalment_or_a_threshold_leaves_no_price(line: str) -> None:
    assert parse_price(without_other_amounts(line)) is None


@pytest.mark.parametrize(
    ("line", "amount"),
    [("$410.00 or as low as $37 a month.", "410"), ("Immediate payment of US $649.99 is required.", "649.99"),
     ("Mattress 2'6\" x 6'6\" (75 x 200 x 22 cm) ( £1,049.00 )", "1049"), ("2 for €10", "10"),
     ("$24.99", "24.99")],
)  # fmt: skip
def test_the_price_beside_them_stays(line: str, amount: str) -> None:
    price = parse_price(without_other_amounts(line))
    assert price is not None and price.amount == Decimal(amount)


def test_a_shipping_threshold_below_the_name_is_not_the_price() -> None:
    html = """<html><body><div class="item"><h1>Wall Calendar 2027</h1>
    <p>Free Standard Shipping above $35</p><p>Item # WC27</p><p>Your price: $14.99</p>
    <button>Add to cart</button></div></body></html>"""
    product = extract_product(Markup(html), read_structured(html, URL), URL, html=html)
    assert product is not None and product.price == Decimal("14.9900")
