"""Prices as people and markup write them, to an exact ``Decimal`` and an ISO 4217 currency.

Display text (``"1.299,00 €"``, ``"$1,299.99 - $1,499.99"``, ``"12.50 USD"``) is read the way a
shopper would: the last of two different separators is the decimal mark, a range gives its low end.
Only a lone separator before exactly three digits (``"1.299"``, ``"12,990"``) is open in the string
itself; the currency's conventions and then the page's own evidence settle it
(:func:`lone_mark_is_decimal`), else it groups thousands, as in almost every shop. Structured values
(JSON-LD, microdata ``content``) follow schema.org, where a lone ``.`` is the decimal mark, except in a
currency that has no minor unit in practice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

SCALE = Decimal("0.0001")
"""Every price is quantized to 4 fractional digits, the page record's decimal scale."""
MAX_PRICE = Decimal(10) ** 14  # precision 18, scale 4: 14 integer digits fit

ISO_CODES = frozenset(
    {
        "AED", "ARS", "AUD", "BGN", "BRL", "CAD", "CHF", "CLP", "CNY", "COP", "CZK", "DKK", "EGP", "EUR",
        "GBP", "HKD", "HUF", "IDR", "ILS", "INR", "ISK", "JPY", "KRW", "MXN", "MYR", "NGN", "NOK", "NZD",
        "PEN", "PHP", "PKR", "PLN", "QAR", "RON", "RSD", "RUB", "SAR", "SEK", "SGD", "THB", "TRY", "TWD",
        "UAH", "USD", "VND", "ZAR", "BHD", "JOD", "KWD", "OMR", "TND",
    }
)  # fmt: skip
"""Codes recognised in display text; structured ``priceCurrency`` accepts any three-letter code."""
WHOLE_CURRENCIES = frozenset({"CLP", "COP", "HUF", "IDR", "ISK", "JPY", "KRW", "PYG", "UGX", "VND"})
"""Currencies whose prices are written without a fraction (ISO 4217 minor unit 0, or 2 but never used in
shops): a lone separator before three digits groups thousands, even in structured data ("12.990" CLP)."""
THREE_DECIMAL_CURRENCIES = frozenset({"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"})
"""Currencies with three decimals (ISO 4217 minor unit 3): "KWD 12.990" is twelve dinars and 990 fils."""
DecimalMark = Callable[[], str | None]
"""The page's decimal mark ("." or ","), or ``None`` where its prices do not show it: asked only when a
string's own separators leave the reading open, so that most pages never pay for finding it."""

# Longest first, so that "US$" wins over "$". "kr" is left out: SEK, NOK, DKK and ISK all use it.
SYMBOLS: dict[str, str] = {
    "US$": "USD", "CA$": "CAD", "AU$": "AUD", "NZ$": "NZD", "HK$": "HKD", "Mex$": "MXN",
    "C$": "CAD", "A$": "AUD", "S$": "SGD", "R$": "BRL", "zł": "PLN", "Kč": "CZK", "Ft": "HUF",
    "€": "EUR", "$": "USD", "£": "GBP", "¥": "JPY", "₹": "INR", "₩": "KRW", "₽": "RUB",
    "₺": "TRY", "₪": "ILS", "₫": "VND", "₱": "PHP", "฿": "THB", "₴": "UAH", "₦": "NGN",
    "руб": "RUB", "грн": "UAH", "лв": "BGN",  # noqa: RUF001 (Cyrillic abbreviations, meant)
    "円": "JPY", "\uffe5": "JPY",  # Japanese shops write "1,320円(税込)" or a full-width yen sign
}  # fmt: skip

_SPACES = "\u00a0\u202f\u2009 "
# Digits, groups of exactly three after a separator, then decimals: "12.99 19.99" stays two numbers.
_DASHES = "-\u2013"  # "12,-" and "12,\u2013" (en dash) mean 12.00
_NUMBER = rf"\d+(?:[{_SPACES}.,']\d{{3}}(?!\d))*(?:[.,]\d+|[.,][{_DASHES}]{{1,2}})?"
_SYMBOL = "|".join(re.escape(symbol) for symbol in sorted(SYMBOLS, key=len, reverse=True))
_CODE = r"(?<![A-Za-z])[A-Z]{3}(?![A-Za-z])"
_MONEY = re.compile(
    rf"(?P<pre>{_SYMBOL}|{_CODE})[{_SPACES}]?(?P<a>{_NUMBER})|(?P<b>{_NUMBER})[{_SPACES}]?(?P<post>{_SYMBOL}|{_CODE})"
)
_BARE = re.compile(_NUMBER)
_PERCENT = re.compile(rf"[{_SPACES}]?%")
_CURRENCY = re.compile(rf"{_SYMBOL}|{_CODE}")
_ANY_CURRENCY = re.compile(
    "|".join(re.escape(name) for name in sorted((*SYMBOLS, *ISO_CODES), key=len, reverse=True))
)


@dataclass(frozen=True)
class Price:
    """An amount (4 fractional digits) and its ISO 4217 currency, when one was written."""

    amount: Decimal
    currency: str | None


def parse_price(
    text: str, default_currency: str | None = None, *, decimal_mark: DecimalMark | None = None
) -> Price | None:
    """The first price written in ``text``, or ``None`` when it holds no amount.

    An amount next to a currency symbol or code is preferred over a bare number, so that
    ``"2 for €10"`` reads 10 EUR; ``default_currency`` applies when the text names none.
    ``decimal_mark`` gives the page's decimal mark where the string leaves it open (:func:`parse_amount`).
    """
    for match in _MONEY.finditer(text):
        currency = _display_currency(match.group("pre") or match.group("post") or "")
        if currency is None:
            continue
        amount = parse_amount(
            match.group("a") or match.group("b") or "", currency=currency, decimal_mark=decimal_mark
        )
        if amount is not None:
            return Price(amount, currency)
    bare = next((m for m in _BARE.finditer(text) if not _PERCENT.match(text, m.end())), None)
    if bare is None:  # a percentage ("inkl. 19% MwSt") is no price
        return None
    currency = find_currency(text) or currency_code(default_currency or "")
    amount = parse_amount(bare.group(), currency=currency, decimal_mark=decimal_mark)
    return Price(amount, currency) if amount is not None else None


def parse_amount(
    text: str,
    *,
    structured: bool = False,
    currency: str | None = None,
    decimal_mark: DecimalMark | None = None,
) -> Decimal | None:
    """``text`` (one number as written) as a quantized, non-negative ``Decimal``; ``None`` if it is none.

    With ``structured`` a lone ``.`` is a decimal mark (schema.org's rule for ``price``); a lone
    separator before three digits is otherwise read by :func:`lone_mark_is_decimal`.
    """
    digits = _normalise_separators(
        text.strip().rstrip(_DASHES).rstrip(".,"), structured, currency, decimal_mark
    )
    if digits is None:
        return None
    try:
        amount = Decimal(digits).quantize(SCALE, rounding=ROUND_HALF_EVEN)
    except InvalidOperation:
        return None
    return amount if 0 <= amount < MAX_PRICE else None


def amount_of(
    value: object,
    currency: str | None = None,
    *,
    structured: bool = True,
    decimal_mark: DecimalMark | None = None,
) -> Decimal | None:
    """A structured price value (string, int or float) as a quantized ``Decimal``; ``currency`` is its
    ``priceCurrency``, where known (a currency without a fraction groups "12.990"). Without
    ``structured``, a string is read as display text is (:func:`parse_amount`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        return parse_amount(str(value), structured=True)  # a number's "." is its decimal point
    if isinstance(value, str):
        match = _BARE.search(value)
        if match is None:
            return None
        return parse_amount(
            match.group(), structured=structured, currency=currency, decimal_mark=decimal_mark
        )
    return None


def lone_mark_is_decimal(
    mark: str, *, structured: bool, currency: str | None, decimal_mark: DecimalMark | None
) -> bool:
    """Whether a lone ``mark`` before exactly three digits ("1.299", "12,990") is the decimal mark.

    The string cannot say, and reading it wrong is 1,000x off. In order of evidence: a currency without a
    fraction groups, a three-decimal currency's mark is decimal, then the page's own decimal mark (the
    one its unambiguous prices use: on a page of "12,99 €" a "1.299 €" groups and a "1,299 €" is not
    grouping); then schema.org's "." for structured values; else it groups thousands, since prices with
    three decimals are rare in every locale ("$1,299", "1.299 €", "$12.990" in Chile). The page's
    ``lang`` is no evidence here: a price's three decimals are as rare on an English page as elsewhere,
    and Latin American or Indonesian shops often declare ``en`` while grouping with ".".
    """
    if currency in WHOLE_CURRENCIES:
        return False
    if currency in THREE_DECIMAL_CURRENCIES:
        return True
    page_mark = decimal_mark() if decimal_mark is not None else None
    if page_mark is not None:
        return mark == page_mark
    return structured and mark == "."


def money_numbers(text: str) -> Iterator[str]:
    """Every number written beside a known currency symbol or code in ``text``, as written."""
    for match in _MONEY.finditer(text):
        if _display_currency(match.group("pre") or match.group("post") or "") is not None:
            yield match.group("a") or match.group("b") or ""


def currency_code(text: str) -> str | None:
    """An ISO 4217 code from a code (any case) or a symbol; ``None`` for ambiguous or unknown text."""
    text = text.strip()
    if text in SYMBOLS:
        return SYMBOLS[text]
    upper = text.upper()
    if len(upper) == 3 and upper.isascii() and upper.isalpha():
        return upper
    return None


def find_currency(text: str) -> str | None:
    """The first currency (known code or symbol) written anywhere in ``text``."""
    for match in _CURRENCY.finditer(text):
        currency = _display_currency(match.group())
        if currency is not None:
            return currency
    return None


def names_currency(text: str) -> bool:
    """Whether ``text`` holds a currency symbol or known code anywhere, even inside a word.

    A cheap test that no part of ``text`` (a line, or two lines joined) can read as a price with a
    currency (:func:`parse_price`, :func:`find_currency`): those read only these symbols and codes.
    One search in C, where reading every line that holds a digit cost 1-3 ms on a documentation page.
    """
    return _ANY_CURRENCY.search(text) is not None


def _display_currency(text: str) -> str | None:
    # In running text only known codes count: "VAT 19" or "SKU 42" name no currency.
    return SYMBOLS.get(text) or (text if text in ISO_CODES else None)


def _normalise_separators(
    text: str, structured: bool, currency: str | None, decimal_mark: DecimalMark | None
) -> str | None:
    text = re.sub(f"[{_SPACES}']", "", text)
    if not text or not re.fullmatch(r"[\d.,]+", text):
        return None
    dots, commas = text.count("."), text.count(",")
    if dots and commas:
        last = "." if text.rfind(".") > text.rfind(",") else ","
        grouping = "," if last == "." else "."
        return text.replace(grouping, "").replace(last, ".")
    if not dots and not commas:
        return text
    mark = "." if dots else ","
    if dots + commas > 1:
        return text.replace(mark, "")  # 1.299.000 or 1,299,000: grouping only
    whole, fraction = text.split(mark)
    open_reading = len(fraction) == 3 and whole not in ("", "0")
    if open_reading and not lone_mark_is_decimal(
        mark, structured=structured, currency=currency, decimal_mark=decimal_mark
    ):
        return whole + fraction
    return f"{whole or '0'}.{fraction}"
