"""Decimal and thousands separators decided by the page's evidence, never 1,000x off (issue #35).

Property tests (hypothesis) of the pure parser, and two pages read whole by the product step.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.decimal_marks import decimal_mark_shown, page_decimal_mark
from dualplane.data_plane.extract.product.prices import amount_of, parse_price
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/1"
MARKS = st.sampled_from([".", ","])
SYMBOLS = st.sampled_from(["€", "$", "£", "CHF", "zł", "Kč", "R$"])
CENTS = st.integers(min_value=1, max_value=99_999_999)  # an amount in cents, up to 999,999.99
WHOLE_CODES = st.sampled_from(["¥", "JPY", "CLP"])
LOADED = settings(deadline=None)  # CI's load reaches 60: a slow example is no failure


def written(cents: int, decimal: str, *, fraction: bool = True) -> str:
    """``cents`` as a shop of that decimal mark writes it: "1.299,00" or "1,299.00" (or "1.299")."""
    grouping = "," if decimal == "." else "."
    whole = f"{cents // 100:,}".replace(",", grouping)
    return f"{whole}{decimal}{cents % 100:02d}" if fraction else whole


@LOADED
@given(CENTS, MARKS, SYMBOLS, st.booleans())
def test_a_price_with_its_cents_reads_exactly_in_either_convention(
    cents: int, decimal: str, symbol: str, before: bool
) -> None:
    number = written(cents, decimal)
    text = f"{symbol} {number}" if before else f"{number} {symbol}"
    price = parse_price(text)
    assert price is not None
    assert price.amount == Decimal(cents) / 100


@LOADED
@given(st.integers(min_value=1, max_value=999), st.integers(min_value=0, max_value=999), MARKS, MARKS)
def test_a_lone_mark_before_three_digits_follows_the_pages_decimal_mark(
    whole: int, digits: int, lone: str, page: str
) -> None:
    # "1.299" on a page whose other prices show their cents: never 1,000x off that page's convention.
    text = f"{whole}{lone}{digits:03d} €"
    price = parse_price(text, decimal_mark=lambda: page)
    assert price is not None
    as_decimal = Decimal(whole) + Decimal(digits) / 1000
    assert price.amount == (as_decimal if lone == page else whole * 1000 + digits)


@LOADED
@given(st.integers(min_value=1, max_value=999), st.integers(min_value=0, max_value=999), MARKS)
def test_without_evidence_a_lone_mark_before_three_digits_groups_thousands(
    whole: int, digits: int, lone: str
) -> None:
    price = parse_price(f"{whole}{lone}{digits:03d} €", decimal_mark=lambda: None)
    assert price is not None and price.amount == whole * 1000 + digits


@LOADED
@given(st.integers(min_value=1000, max_value=999_999_999), MARKS, MARKS, WHOLE_CODES)
def test_a_currency_without_a_fraction_always_groups(
    amount: int, grouping: str, page: str, code: str
) -> None:
    price = parse_price(f"{code} {amount:,}".replace(",", grouping), decimal_mark=lambda: page)
    assert price is not None and price.amount == amount


@LOADED
@given(st.integers(min_value=1, max_value=999), st.integers(min_value=0, max_value=999))
def test_a_three_decimal_currency_reads_its_fils(whole: int, fils: int) -> None:
    price = parse_price(f"KWD {whole}.{fils:03d}")
    assert price is not None and price.amount == Decimal(whole) + Decimal(fils) / 1000


@LOADED
@given(st.lists(CENTS, min_size=1, max_size=6), MARKS, st.integers(min_value=0, max_value=3))
def test_the_page_mark_is_the_one_its_prices_show(prices: list[int], decimal: str, open_ones: int) -> None:
    # Prices shown with cents decide; whole prices written "1.299 €" (open) are no votes either way.
    shown = [f"{written(cents, decimal)} €" for cents in prices]
    open_prices = [f"{written(100_000 + 100 * n, decimal, fraction=False)} €" for n in range(open_ones)]
    assert page_decimal_mark(" | ".join([*open_prices, *shown])) == decimal


def test_conflicting_or_absent_evidence_gives_no_mark() -> None:
    assert page_decimal_mark("12,99 € and $12.99") is None
    assert page_decimal_mark("1.299 € or 2.499 €, 30% off") is None
    assert page_decimal_mark("12,99 € 4,95 € 7,50 € and $12.99") == ","  # a clear majority


@pytest.mark.parametrize(
    ("number", "mark"),
    [("1.299,00", ","), ("12,99", ","), ("12,-", ","), ("1,299.00", "."), ("12.5", "."),
     ("1,299,000", "."), ("1.299.000", ","), ("1.299", None), ("1,299", None), ("1299", None)],
)  # fmt: skip
def test_the_mark_one_number_shows(number: str, mark: str | None) -> None:
    assert decimal_mark_shown(number) == mark


def test_structured_values_keep_schema_orgs_point_except_in_a_whole_currency() -> None:
    assert amount_of("12.990") == Decimal("12.9900")
    assert amount_of("12.990", "CLP") == Decimal("12990.0000")
    assert amount_of(12.99, "CLP") == Decimal("12.9900")  # a JSON number's point is a decimal point


def product_of(html: str) -> ProductFields:
    product = extract_product(Markup(html), read_structured(html, URL), URL, html=html)
    assert product is not None
    return product


def test_a_page_of_decimal_points_reads_a_lone_point_as_decimal() -> None:
    html = """<html><body><div class="product"><h1>Espresso Cups</h1>
    <span class="price">12.990 €</span><p class="shipping-note">Shipping from 4.95 €, free from 49.50 €</p>
    <p>SKU: EC-12</p><button>Add to cart</button></div></body></html>"""
    assert product_of(html).price == Decimal("12.9900")


def test_a_content_value_written_as_displayed_is_read_as_the_page_shows_it() -> None:
    # The shop wrote its display string into content: "1.299" beside "1.299,00 €" is 1,299 euros.
    html = """<html><body><div class="product"><h1>Sofa</h1>
    <span itemprop="price" content="1.299">1.299,00 €</span>
    <p>Art.-Nr. 4711</p><button>In den Warenkorb</button></div></body></html>"""
    assert product_of(html).price == Decimal("1299.0000")
