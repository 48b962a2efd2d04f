"""Containers about other products, told by their class or id however it is written."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from dualplane.data_plane.extract.product.product_area import about_others

pytestmark = pytest.mark.unit


def first_div(attributes: str, inner: str = "") -> bool:
    node = LexborHTMLParser(f"<html><body><div {attributes}>{inner}</div></body></html>").css_first("div")
    assert node is not None
    return about_others(node)


@pytest.mark.parametrize(
    "attributes",
    ['class="product-grid"', 'class="cross_sell"', 'class="Cross-Sell"', 'id="relatedProducts"',
     'class="js-RECENTLY-viewed"', 'class="a b" id="mini_cart"', 'class="pdp upSell"', 'class="Card"'],
)  # fmt: skip
def test_a_class_or_id_about_other_products(attributes: str) -> None:
    assert first_div(attributes)


@pytest.mark.parametrize("attributes", ['class="product-detail"', 'id="main"', "", 'class="cardigan"'])
def test_other_classes(attributes: str) -> None:
    assert not first_div(attributes)


def test_a_container_holding_the_heading_is_the_products_own() -> None:
    assert not first_div('class="detail-card"', "<h1>Blue Mug</h1>")


@pytest.mark.parametrize(
    "heading", ["<h3>Use it with</h3>", "<h2>Customers also bought</h2>", "<h4>Vous aimerez aussi</h4>"]
)
def test_a_block_headed_as_other_products_is_about_them(heading: str) -> None:
    assert first_div('class="ancillaries"', f"\n{heading}<p>$40.00</p>")


@pytest.mark.parametrize("heading", ["<h3>Details</h3>", "<p>Use it with care</p>", "<h2>Related posts</h2>"])
def test_other_headings_leave_the_block_the_products(heading: str) -> None:
    assert not first_div('class="details"', heading)
