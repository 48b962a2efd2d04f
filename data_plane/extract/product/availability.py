"""Stock availability, from schema.org values or shop phrases, to the page record's four stock states.

``in_stock``, ``out_of_stock``, ``limited`` and ``preorder``. A value that means none of them (schema.org
``Reserved``, a template's "unknown") is no stock state: it reads as ``None``, and the record says where
it was seen (``availability_source``) without a value. Phrases in many languages are in
:mod:`~data_plane.extract.product.availability_phrases`. ``BackOrder`` counts as ``preorder``: the buyer can
order now and the item ships later.
"""

from __future__ import annotations

import re
from typing import Literal

from dualplane.data_plane.extract.product.availability_phrases import ANSWERED, LOOSE, STRONG

Availability = Literal["in_stock", "out_of_stock", "limited", "preorder"]

# schema.org ItemAvailability names (and OpenGraph product:availability words), letters only, lowercased.
_ENUM: dict[str, Availability] = {
    "instock": "in_stock", "instoreonly": "in_stock", "onlineonly": "in_stock", "available": "in_stock",
    "availablefororder": "in_stock", "outofstock": "out_of_stock", "oos": "out_of_stock",
    "soldout": "out_of_stock", "discontinued": "out_of_stock", "limitedavailability": "limited",
    "preorder": "preorder", "presale": "preorder", "backorder": "preorder",
}  # fmt: skip


def availability_of(value: str) -> Availability | None:
    """A schema.org availability (``https://schema.org/InStock``, ``InStock``, ``instock``) normalised.

    Falls back to :func:`availability_in` for free text; ``None`` when it names no stock state.
    """
    name = value.strip().rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    enum = _ENUM.get(re.sub(r"[^a-z]", "", name.lower()))
    return enum or availability_in(value, loose=True)


def availability_in(text: str, *, loose: bool = False) -> Availability | None:
    """The availability a shop phrase in ``text`` states ("In stock", "Nur noch 3", "Épuisé"), if any.

    Phrases of many languages are known (:mod:`~data_plane.extract.product.availability_phrases`). With
    ``loose`` (for the text of an element about stock, e.g. ``class="stock"``) a bare "Available",
    "Disponible" or "Skladem" also counts as in stock.
    """
    for availability, pattern in STRONG:
        if availability == "out_of_stock" and ":" in text:  # pre-orders and low stock go first
            answered = next((state for state, label in ANSWERED if label.search(text)), None)
            if answered is not None:
                return answered
        if pattern.search(text):
            return availability
    if loose:
        return next((availability for availability, pattern in LOOSE if pattern.match(text)), None)
    return None
