"""The product's availability from the signals about the product itself, and ``None`` when they disagree.

Signals, the product's own only (hidden elements, other products' boxes and size or colour options never
give one; see :mod:`~data_plane.extract.product.product_markup`):

- *published*: the offer's ``availability`` (JSON-LD, microdata, RDFa), ``product:availability`` meta,
  the embedded state's stock flag, an ``itemprop=availability``;
- *statement*: what a visible element about stock states (``class="availability"``: "Out of stock"), or
  a buy control whose label is one ("Sold out");
- *button*: the product's add-to-cart control, ``enabled`` or ``disabled``;
- *phrase*: a short stock line in the product's area ("Produkt nicht verfügbar").

A phrase never overrides a published state: shops print "sold out" for a size, a colour or a related
item right beside a product that is in stock. Signals that contradict each other give ``None``, not a
guess: of real product pages most are in stock, and a wrong ``out_of_stock`` costs more than none. An
enabled add-to-cart control alone is in-stock evidence: the shop takes orders for it now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dualplane.data_plane.extract.product.availability import Availability

ButtonState = Literal["enabled", "disabled"]
IN_STOCK_LIKE = frozenset({"in_stock", "limited", "preorder"})


@dataclass(frozen=True)
class StockSignals:
    """What a product page says about the product's stock, each signal ``None`` where it says nothing."""

    published: Availability | None = None
    statement: Availability | None = None
    button: ButtonState | None = None
    phrase: Availability | None = None


def decide(signals: StockSignals) -> Availability | None:
    """The product's availability, or ``None`` when its signals state none or contradict each other."""
    if signals.published is not None:
        return _with_published(signals.published, signals)
    if signals.statement is not None:
        return _agreed(signals.statement, signals.button)
    if signals.phrase is not None:
        return _agreed(signals.phrase, signals.button)
    return "in_stock" if signals.button == "enabled" else None


def _with_published(published: Availability, signals: StockSignals) -> Availability | None:
    """A published state stands unless a visible statement contradicts it.

    A low-stock statement or phrase refines a published "in stock" (the same state, said more precisely).
    A statement of the opposite state makes the page disagree with itself: unless the add-to-cart control
    settles it (enabled for in stock, disabled for out of stock), nothing is said.
    """
    visible = signals.statement
    if published == "in_stock" and "limited" in (visible, signals.phrase):
        return "limited"
    if visible is None or (visible in IN_STOCK_LIKE) == (published in IN_STOCK_LIKE):
        return published
    if signals.button == "enabled":
        return published if published in IN_STOCK_LIKE else None
    if signals.button == "disabled" and visible == "out_of_stock":
        return "out_of_stock"
    return None


def _agreed(stated: Availability, button: ButtonState | None) -> Availability | None:
    """What the page states, unless its add-to-cart control is enabled for a product stated sold out."""
    if stated == "out_of_stock" and button == "enabled":
        return None
    return stated
