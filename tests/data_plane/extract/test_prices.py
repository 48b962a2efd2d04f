"""Prices and currencies as shops write them, to exact decimals and ISO 4217 codes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dualplane.data_plane.extract.product.prices import (
    Price,
    amount_of,
    currency_code,
    find_currency,
    names_currency,
    parse_price,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "amount", "currency"),
    [
        ("1,299.00", "1299.0000", None),
        ("1.299,00", "1299.0000", None),
        ("€12", "12.0000", "EUR"),
        ("12.50 USD", "12.5000", "USD"),
        ("USD 12.50", "12.5000", "USD"),
        ("£90.99", "90.9900", "GBP"),
        ("¥1,299", "1299.0000", "JPY"),
        ("1,320円(税込)", "1320.0000", "JPY"),  # bookwalker.jp
        ("\uffe51,320", "1320.0000", "JPY"),  # a full-width yen sign
        ("$24.99", "24.9900", "USD"),
        ("1.299,00\u00a0€", "1299.0000", "EUR"),
        ("1 299,00 €", "1299.0000", "EUR"),
        ("1\u202f299,00 €", "1299.0000", "EUR"),
        ("CHF 1'299.50", "1299.5000", "CHF"),
        ("R$ 10,00", "10.0000", "BRL"),
        ("US$5", "5.0000", "USD"),
        ("0,99 €", "0.9900", "EUR"),
        ("12,-", "12.0000", None),
        ("12,5", "12.5000", None),
        ("1,299", "1299.0000", None),
        ("1.299", "1299.0000", None),
        ("12.5000", "12.5000", None),
        ("€ 1.234.567,89", "1234567.8900", "EUR"),
        ("€10 - €20", "10.0000", "EUR"),
        ("$1,299.99 \u2013 $1,499.99", "1299.9900", "USD"),
        ("from £9.99", "9.9900", "GBP"),
        ("2 for €10", "10.0000", "EUR"),
        ("VAT 19 €12.99", "12.9900", "EUR"),
        ("€12.99 19.99", "12.9900", "EUR"),
        ("EUR12", "12.0000", "EUR"),
        ("12.50 XYZ", "12.5000", None),
    ],
)
def test_display_prices(text: str, amount: str, currency: str | None) -> None:
    assert parse_price(text) == Price(Decimal(amount), currency)


@pytest.mark.parametrize("text", ["", "free", "Call for price", "€", "n/a"])
def test_text_without_an_amount_has_no_price(text: str) -> None:
    assert parse_price(text) is None


def test_default_currency_applies_only_when_the_text_names_none() -> None:
    assert parse_price("12.50", default_currency="eur") == Price(Decimal("12.5000"), "EUR")
    assert parse_price("£12.50", default_currency="EUR") == Price(Decimal("12.5000"), "GBP")


@pytest.mark.parametrize(
    ("value", "amount"),
    [
        ("1.299", "1.2990"),
        ("1,299.00", "1299.0000"),
        ("12,50", "12.5000"),
        (12.5, "12.5000"),
        (1299, "1299.0000"),
    ],
)
def test_structured_values_follow_schema_org(value: object, amount: str) -> None:
    assert amount_of(value) == Decimal(amount)


@pytest.mark.parametrize("value", [True, None, {"price": 1}, "", "-", "1" * 15])
def test_structured_values_that_are_no_price(value: object) -> None:
    assert amount_of(value) is None


def test_amounts_are_quantized_to_the_record_scale() -> None:
    amount = amount_of("19.999999")
    assert amount == Decimal("20.0000") and amount.as_tuple().exponent == -4


def test_currency_codes_and_symbols() -> None:
    assert [currency_code(text) for text in ("eur", "€", "£", "$", "¥", "kr", "euro")] == [
        "EUR", "EUR", "GBP", "USD", "JPY", None, None,
    ]  # fmt: skip
    assert find_currency("Price incl. VAT: 12 EUR") == "EUR"
    assert find_currency("SKU ABC price 12") is None


@pytest.mark.parametrize(
    "text",
    ["$24.99", "12.50 USD", "1,320円", "VAT 19 €12.99", "XYKč 100", "ABC$5", "1 299 Ft", "EUREKA 3"],
)
def test_text_naming_a_currency_anywhere_is_told(text: str) -> None:
    assert names_currency(text)


@pytest.mark.parametrize(
    "text", ["Version 1.2.3 of 2024-05-01", "pcre2_match(code, subject, 42)", "SKU 4711", ""]
)
def test_text_naming_no_currency_has_no_price_with_one(text: str) -> None:
    # names_currency is the gate before reading prices line by line: where it says no, no line (and no two
    # lines joined) may give a price with a currency.
    assert not names_currency(text)
    assert all(
        price is None or price.currency is None
        for price in (parse_price(text), parse_price(f"{text} {text}"))
    )
    assert find_currency(text) is None
