"""A page's decimal mark, from the prices it writes unambiguously.

"1.299" is 1,299 on a page of "12,99 €" and 1.299 on a page of "KWD 0.750": the string alone cannot
say, and reading it wrong is 1,000x off (a price-watch alert for a move that never happened). So the
page decides: every number written beside a currency that shows its decimal mark ("1.299,00", "12,99",
"1,299.00", "1,299,000") is a vote, and a clear majority is the page's mark. Pages whose prices are
all open ("1.299 €" alone) give none, and the string keeps the shops' common reading (thousands).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from dualplane.data_plane.extract.product.prices import DecimalMark, money_numbers

MAJORITY = 2
"""A mark is the page's when it has at least this many times the other's votes (a page may quote one
price in another locale: a currency switcher, a shipping line copied from another shop)."""
VOTE_CHARS = 20_000
"""The page text read for votes: a product's prices come first; a long page's tail adds no evidence."""
_SPACES = re.compile("[\u00a0\u202f\u2009 ']")
_DASHES = "-\u2013"


def decimal_mark_shown(number: str) -> str | None:
    """The decimal mark one written number shows unambiguously, else ``None``.

    "1.299,00", "12,99" and "12,-" show ","; "1,299.00", "12.5" and "1,299,000" (a repeated mark groups)
    show "."; "1.299" and "1299" show none.
    """
    number = _SPACES.sub("", number).rstrip(_DASHES)
    if number.endswith((",", ".")):  # "12,-": the mark before the dash is the decimal one
        return number[-1]
    dots, commas = number.count("."), number.count(",")
    if dots and commas:
        return "." if number.rfind(".") > number.rfind(",") else ","
    if dots + commas == 0:
        return None
    mark = "." if dots else ","
    if dots + commas > 1:
        return "," if mark == "." else "."
    return mark if len(number) - number.rfind(mark) - 1 != 3 else None


def page_decimal_mark(text: str) -> str | None:
    """The decimal mark of the prices in ``text``: the one a clear majority of them show, else ``None``."""
    votes = {".": 0, ",": 0}
    for number in money_numbers(text[:VOTE_CHARS]):
        shown = decimal_mark_shown(number)
        if shown is not None:
            votes[shown] += 1
    dots, commas = votes["."], votes[","]
    if dots and dots >= MAJORITY * commas:
        return "."
    if commas and commas >= MAJORITY * dots:
        return ","
    return None


def page_mark(text: Callable[[], str]) -> DecimalMark:
    """:func:`page_decimal_mark` of ``text()``, worked out on the first question and kept."""

    @cache
    def mark() -> str | None:
        return page_decimal_mark(text())

    return mark
