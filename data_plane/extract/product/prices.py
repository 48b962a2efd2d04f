"""Prices as people and markup write them, to an exact ``Decimal`` and an ISO 4217 currency.

Display text (``"1.299,00 €"``, ``"$1,299.99 - $1,499.99"``, ``"12.50 USD"``) is read the way a
shopper would: the last of two different separators is the decimal mark, a lone separator followed by
exactly three digits groups thousands, a range gives its low end. Structured values (JSON-LD, microdata
``content``) follow schema.org, where a lone ``.`` is always the decimal mark.
"""

from __future__ import annotations

import re
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
        "UAH", "USD", "VND", "ZAR",
    }
)  # fmt: skip
"""Codes recognised in display text; structured ``priceCurrency`` accepts any three-letter code."""

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


def parse_price(text: str, default_currency: str | None = None) -> Price | None:
    """The first price written in ``text``, or ``None`` when it holds no amount.

    An amount next to a currency symbol or code is preferred over a bare number, so that
    ``"2 for €10"`` reads 10 EUR; ``default_currency`` applies when the text names none.
    """
    for match in _MONEY.finditer(text):
        currency = _display_currency(match.group("pre") or match.group("post") or "")
        amount = parse_amount(match.group("a") or match.group("b") or "")
        if currency is not None and amount is not None:
            return Price(amount, currency)
    bare = next((m for m in _BARE.finditer(text) if not _PERCENT.match(text, m.end())), None)
    amount = parse_amount(bare.group()) if bare else None  # a percentage ("inkl. 19% MwSt") is no price
    if amount is None:
        return None
    return Price(amount, find_currency(text) or currency_code(default_currency or ""))


def parse_amount(text: str, *, structured: bool = False) -> Decimal | None:
    """``text`` (one number as written) as a quantized, non-negative ``Decimal``; ``None`` if it is none.

    With ``structured`` a lone ``.`` is always a decimal mark (schema.org's rule for ``price``).
    """
    digits = _normalise_separators(text.strip().rstrip(_DASHES).rstrip(".,"), structured)
    if digits is None:
        return None
    try:
        amount = Decimal(digits).quantize(SCALE, rounding=ROUND_HALF_EVEN)
    except InvalidOperation:
        return None
    return amount if 0 <= amount < MAX_PRICE else None


def amount_of(value: object) -> Decimal | None:
    """A structured price value (string, int or float) as a quantized ``Decimal``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        return parse_amount(str(value), structured=True)
    if isinstance(value, str):
        match = _BARE.search(value)
        return parse_amount(match.group(), structured=True) if match else None
    return None


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


def _normalise_separators(text: str, structured: bool) -> str | None:
    text = re.sub(f"[{_SPACES}']", "", text)
    if not text or not re.fullmatch(r"[\d.,]+", text):
        return None
    dots, commas = text.count("."), text.count(",")
    if dots and commas:
        decimal_mark = "." if text.rfind(".") > text.rfind(",") else ","
        grouping = "," if decimal_mark == "." else "."
        return text.replace(grouping, "").replace(decimal_mark, ".")
    if not dots and not commas:
        return text
    mark = "." if dots else ","
    if dots + commas > 1:
        return text.replace(mark, "")  # 1.299.000 or 1,299,000: grouping only
    whole, fraction = text.split(mark)
    groups_thousands = len(fraction) == 3 and whole not in ("", "0")
    if groups_thousands and not (structured and mark == "."):
        return whole + fraction
    return f"{whole or '0'}.{fraction}"
