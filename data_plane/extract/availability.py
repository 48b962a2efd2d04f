"""Stock availability, from schema.org values or shop phrases, to the page record's five values.

``in_stock``, ``out_of_stock``, ``limited``, ``preorder`` and ``unknown`` (a value was published but
means none of the others, e.g. schema.org ``Reserved``). ``BackOrder`` counts as ``preorder``: the
buyer can order now and the item ships later.
"""

from __future__ import annotations

import re
from typing import Literal

Availability = Literal["in_stock", "out_of_stock", "limited", "preorder", "unknown"]

# schema.org ItemAvailability names (and OpenGraph product:availability words), letters only, lowercased.
_ENUM: dict[str, Availability] = {
    "instock": "in_stock", "instoreonly": "in_stock", "onlineonly": "in_stock", "available": "in_stock",
    "availablefororder": "in_stock", "outofstock": "out_of_stock", "oos": "out_of_stock",
    "soldout": "out_of_stock", "discontinued": "out_of_stock", "limitedavailability": "limited",
    "preorder": "preorder", "presale": "preorder", "backorder": "preorder",
}  # fmt: skip

# Checked in this order: "nearly sold out" is limited, not out of stock; "not in stock" is out.
_PHRASES: tuple[tuple[Availability, re.Pattern[str]], ...] = (
    ("preorder", re.compile(r"\bpre[\s-]?orders?\b|\bpre[\s-]?sale\b|\bback[\s-]?order", re.I)),
    (
        "limited",
        re.compile(
            r"\bonly \d+ (?:\w+ )?(?:left|remaining|in stock)\b|\b\d+ (?:left|remaining) in stock\b"
            r"|\blimited (?:stock|availability|quantit(?:y|ies))\b|\blow (?:in )?stock\b"
            r"|\b(?:almost|nearly) (?:gone|sold out)\b|\bfew (?:items )?left\b|\bnur noch \d+\b",
            re.I,
        ),
    ),
    (
        "out_of_stock",
        re.compile(
            r"\bout[\s-]of[\s-]stock\b|\bsold[\s-]?out\b|\bnot (?:currently )?(?:in stock|available)\b"
            r"|\bunavailable\b|\bno longer available\b|\bdiscontinued\b|\bausverkauft\b"
            r"|\bnicht (?:auf lager|verfügbar|lieferbar)\b|\bépuisé\b|\brupture de stock\b|\bagotado\b",
            re.I,
        ),
    ),
    (
        "in_stock",
        re.compile(
            r"\bin[\s-]stock\b|\bavailable (?:now|to ship)\b"
            r"|\bavailable for (?:immediate )?(?:shipping|delivery|dispatch)\b|\bready to ship\b"
            r"|\bauf lager\b|\bsofort lieferbar\b|\ben stock\b|\bop voorraad\b",
            re.I,
        ),
    ),
)
_LOOSE_IN_STOCK = re.compile(r"^\s*(?:available|in stock|disponible|verfügbar|lieferbar)\W*$", re.I)


def availability_of(value: str) -> Availability:
    """A schema.org availability (``https://schema.org/InStock``, ``InStock``, ``instock``) normalised.

    Falls back to :func:`availability_in` for free text; ``unknown`` when nothing matches.
    """
    name = value.strip().rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    enum = _ENUM.get(re.sub(r"[^a-z]", "", name.lower()))
    return enum or availability_in(value) or "unknown"


def availability_in(text: str, *, loose: bool = False) -> Availability | None:
    """The availability a shop phrase in ``text`` states ("In stock", "Only 3 left", "Pre-order"), if any.

    With ``loose`` (for text of an element that is about stock, e.g. ``class="stock"``) a bare
    "Available" also counts as in stock.
    """
    for availability, pattern in _PHRASES:
        if pattern.search(text):
            return availability
    if loose and _LOOSE_IN_STOCK.match(text):
        return "in_stock"
    return None
