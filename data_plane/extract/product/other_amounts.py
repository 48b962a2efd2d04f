"""Amounts a price line states that are not the price to pay: instalments and free-shipping thresholds.

"4 x 25,00 €", "or 4 payments of $12.50", "$37/mo", "Free shipping on orders over $70": each is an
amount next to its currency, and each sits beside (or instead of) the product's price, in its
price element or on the line the text route reads. :func:`without_other_amounts` blanks those amounts
out of a line, leaving the rest of it ("$410.00 or as low as $37 a month" keeps "$410.00").
"""

from __future__ import annotations

import re

# An amount with its currency on either side, as shops write it ("$12.50", "25,00 €", "US $649", "EUR 9").
_MONEY = (
    r"(?:(?:[A-Z]{1,3}\s?)?[^\w\s\d]{1,3}|[A-Z]{3})?\s?\d[\d.,'\u00a0\u202f]*"
    r"(?:\s?(?:[^\w\s\d]{1,3}|zł|Kč|[A-Z]{3})(?!\w))?"
)
_INSTALMENT_COUNT = rf"\b\d{{1,2}}\s?[x\u00d7]\s?(?=[^\d\s]{{1,3}}\s?\d|\d[\d.,]*\s?[^\w\s\d]){_MONEY}"
_INSTALMENT_OF = (
    r"(?:\b\d{1,2}\s+(?:[\w-]+\s+){0,2})?"  # the count: "4 interest-free payments of"
    r"\b(?:payments|instal+ments|raten|mensualit[ée]s|cuotas|rate|pagamenti)\s+"
    rf"(?:of|von|à|a|de|da|di)\s+{_MONEY}"
)
_PER_MONTH = (
    rf"{_MONEY}\s*(?:/\s?mo(?:nth)?\b\.?|per month\b|a month\b|monthly\b|mtl\.|monatlich\b|"
    r"par mois\b|al mes\b|al mese\b|/\s?mois\b|/\s?monat\b)"
)
_THRESHOLD = (
    r"\b(?:orders?|shipping|delivery|versandkostenfrei|lieferung|livraison|env[íi]o|spedizione)\b"
    rf"[^\n.!]{{0,30}}?\b(?:over|above|from|ab|dès|à partir de|desde|más de|sopra|da)\s+{_MONEY}"
)
_OTHER_AMOUNT = re.compile("|".join((_INSTALMENT_COUNT, _INSTALMENT_OF, _PER_MONTH, _THRESHOLD)), re.I)


def without_other_amounts(line: str) -> str:
    """``line`` with its instalment, per-month and free-shipping-threshold amounts blanked out."""
    return _OTHER_AMOUNT.sub(" ", line)  # a line without one comes back as it is, at one search's cost
