"""Availability from schema.org values and shop phrases, to the page record's five values."""

from __future__ import annotations

import pytest

from data_plane.extract.availability import availability_in, availability_of

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://schema.org/InStock", "in_stock"),
        ("http://schema.org/OutOfStock", "out_of_stock"),
        ("https://schema.org/LimitedAvailability", "limited"),
        ("https://schema.org/PreOrder", "preorder"),
        ("https://schema.org/BackOrder", "preorder"),
        ("https://schema.org/SoldOut", "out_of_stock"),
        ("https://schema.org/Discontinued", "out_of_stock"),
        ("https://schema.org/InStoreOnly", "in_stock"),
        ("schema:PreSale", "preorder"),
        ("InStock", "in_stock"),
        ("instock", "in_stock"),
        ("oos", "out_of_stock"),
        ("https://schema.org/Reserved", "unknown"),
        ("whatever", "unknown"),
    ],
)
def test_schema_org_values(value: str, expected: str) -> None:
    assert availability_of(value) == expected


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("In stock", "in_stock"),
        ("In Stock - ships today", "in_stock"),
        ("Available now", "in_stock"),
        ("Auf Lager", "in_stock"),
        ("Out of stock", "out_of_stock"),
        ("Sold out", "out_of_stock"),
        ("Currently unavailable.", "out_of_stock"),
        ("Not in stock", "out_of_stock"),
        ("Ausverkauft", "out_of_stock"),
        ("Only 3 left", "limited"),
        ("Only 2 left in stock - order soon.", "limited"),
        ("Hurry, only 1 item left!", "limited"),
        ("Low stock", "limited"),
        ("Nearly sold out", "limited"),
        ("Pre-order", "preorder"),
        ("Available for pre-order", "preorder"),
        ("Preorder now", "preorder"),
        ("Backorder: ships in 3 weeks", "preorder"),
    ],
)
def test_shop_phrases(phrase: str, expected: str) -> None:
    assert availability_in(phrase) == expected


def test_a_bare_available_counts_only_on_a_stock_element() -> None:
    assert availability_in("Available") is None
    assert availability_in("Available", loose=True) == "in_stock"
    assert availability_in("Also available in blue", loose=True) is None
