"""Availability from schema.org values and shop phrases, to the page record's five values."""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.product.availability import availability_in, availability_of

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
        ("https://schema.org/Reserved", None),
        ("whatever", None),
    ],
)
def test_schema_org_values(value: str, expected: str | None) -> None:
    assert availability_of(value) == expected


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("In stock", "in_stock"),
        ("In Stock - ships today", "in_stock"),
        ("Available now", "in_stock"),
        ("Kindle edition: available instantly", "in_stock"),
        ("Auf Lager", "in_stock"),
        ("In stock: Yes", "in_stock"),
        ("In stock: No", "out_of_stock"),
        ("Lieferbar: nein", "out_of_stock"),
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


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("Nur noch 3 auf Lager", "limited"),
        ("Attention : dernières pièces disponibles !", "limited"),
        ("Últimas unidades", "limited"),
        ("Produkt nicht verfügbar", "out_of_stock"),
        ("Épuisé", "out_of_stock"),
        ("Agotado", "out_of_stock"),
        ("Uitverkocht", "out_of_stock"),
        ("Nincs készleten", "out_of_stock"),
        ("Není skladem", "out_of_stock"),
        ("Slut i lager", "out_of_stock"),
        ("Нет в наличии", "out_of_stock"),
        ("Více než 20 ks skladem", "in_stock"),
        ("Op voorraad", "in_stock"),
        ("Disponibilità immediata", "in_stock"),
        ("Raktáron", "in_stock"),
        ("Vorbestellen", "preorder"),
        ("Précommande", "preorder"),
    ],
)
def test_phrases_in_other_languages(phrase: str, expected: str) -> None:
    assert availability_in(phrase) == expected


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("This Product is NOT Available For VAT Relief", None),
        ("Item currently unavailable in your region", None),
        ("This item is not available to ship to your country", None),
        ("This product is not available for purchase", "out_of_stock"),
        ("Product currently unavailable.", "out_of_stock"),
    ],
)
def test_unavailable_for_a_tax_a_region_or_a_delivery_says_nothing_about_stock(
    phrase: str, expected: str | None
) -> None:
    assert availability_in(phrase) == expected


@pytest.mark.parametrize("text", ["Image unavailable", "Disponible en 3 couleurs", "Available in red"])
def test_vague_words_state_nothing_in_running_text(text: str) -> None:
    assert availability_in(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Unavailable", "out_of_stock"), ("Disponible", "in_stock"), ("Skladem", "in_stock")],
)
def test_vague_words_as_the_whole_text_of_a_stock_element(text: str, expected: str) -> None:
    assert availability_in(text, loose=True) == expected
    assert availability_of(text) == expected  # a published value is a whole value too
