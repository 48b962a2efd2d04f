"""Item numbers, GTINs and brands printed next to their labels, in the languages shops sell in."""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.product.product_labels import (
    clean,
    labelled_brand,
    labelled_gtin,
    labelled_sku,
    lines_of,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "sku"),
    [
        ("SKU:\nSKU162628", "SKU162628"),
        ("Product code:\nDZZ49092", "DZZ49092"),
        ("Kód: DOV1512", "DOV1512"),
        ("Katalogové číslo:\n0681e579d790", "0681e579d790"),
        ("Artikelnummer\nABM-205443", "ABM-205443"),
        ("Art.-Nr. 4711-3", "4711-3"),
        ("CODE:\nY0172YCAWT", "Y0172YCAWT"),
        ("Item#:\n01593", "01593"),
        ("Ref #:\n0642", "0642"),
        ("Référence : AB12", "AB12"),
        ("Referencia: 99-XL", "99-XL"),
        ("Cikkszám: 12345", "12345"),
        ("Brand: Kessel · SKU: K-981", "K-981"),
        ("Catalog Item # 34961", "34961"),
        ("Kód tovaru:\ng36173", "g36173"),
        ("SKU: Treasure Garden UM9109-3462", "UM9109-3462"),  # a brand before the number
        ("Stock Code:\nEIKO-H11BCVSUBP1", "EIKO-H11BCVSUBP1"),  # 1000bulbs.com
        ("Код:\u00a096133", "96133"),  # gsm-komplekt.com, as "Code:" alone
        ("Item: 10188", "10188"),  # shop.lego.com
        ("Item:\n76023", "76023"),
        ("By: LEGO\nWalmart #: 552662041", "552662041"),  # walmart.com
        ("Listing # 78608690", "78608690"),  # etsy.com
        ("ISBN-13:\n978-1934356593,\nISBN-10:\n193435659X", "193435659X"),  # amazon.com: a book's ASIN
    ],
)
def test_labelled_item_numbers(text: str, sku: str) -> None:
    assert labelled_sku(text) == sku


@pytest.mark.parametrize(
    "text",
    [
        "Promo code: SAVE10",  # a label inside a sentence is no item number
        "SKU: N/A",  # no digit: no item number
        "Code: FREESHIP",
        "Codeine 500 mg",  # a word that starts like a label
        "ProductId 409718",  # labels of several words are written with a space
        "MPN: EXE195",  # the maker's number, not the shop's
        "Code: use code SAVE10",  # only capitalised words stand before a number, as a brand
        "Item: 3 pack",  # "Item:" alone only before a whole line's identifier
        "Item: Blue shirt 2",
    ],
)
def test_not_item_numbers(text: str) -> None:
    assert labelled_sku(text) is None


def test_direction_marks_and_blank_lines_around_a_label() -> None:
    text = "Product details\n  ASIN\u200f  \n\n :\u200e \n   B0011UCPM4 \nPublisher: Grand Central"
    assert labelled_sku(lines_of(clean(text))) == "B0011UCPM4"


def test_gtins_are_checked_and_brands_end_at_a_separator() -> None:
    assert labelled_gtin("EAN\n8053672356069") == "8053672356069"
    assert labelled_gtin("EAN: 8053672356068") is None  # wrong check digit
    assert labelled_gtin("UPC: 012345678905") == "012345678905"
    assert labelled_brand("Marke: Bosch · Art.-Nr. 1") == "Bosch"
    assert labelled_brand("Brand: Kessel\nSKU: 1") == "Kessel"
