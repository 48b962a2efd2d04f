"""A site that changes over time: a share of the products changes price or stock at every time step.

Site time is cut into steps of ``Changes.period_s``; step 0 begins at ``Changes.epoch_s`` and is the
catalogue as generated. At each later step every product changes with probability ``share``, drawn
from (seed, host, index, step) alone, so any process knows what any product looked like at any step
without keeping history. A change always moves the price, and every other time the availability
too; whether a product changed between two steps is still judged by comparing its two states.

Pages carry validators derived from what they show: the ``ETag`` hashes the body, and
``Last-Modified`` is the start of the step in which the newest change among the products a page shows
happened (the epoch for pages that show none). A product page's "you may also like" cards show the
products as generated (``Catalog.teaser``), so a product page changes only when its own product does.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from email.utils import format_datetime, parsedate_to_datetime
from functools import lru_cache

from dualplane.sample_site.content import Availability, Catalog, Dice, Product, make_product
from dualplane.sample_site.spec import Changes, SiteSpec

AVAILABILITIES: tuple[Availability, ...] = ("InStock", "OutOfStock", "LimitedAvailability", "PreOrder")
_CACHE_SIZE = 8192
# The newest state computed of each product, by (seed, share, host, index): (change step, product).
_newest: dict[tuple[int, float, int, int], tuple[int, Product]] = {}


def changes_at(seed: int, share: float, host: int, index: int, step: int) -> bool:
    """Whether product ``index`` of ``host`` changes at ``step`` (never at step 0)."""
    return step > 0 and Dice(f"dualplane-sample:{seed}:{host}:change:{index}:{step}").chance(share)


@lru_cache(maxsize=_CACHE_SIZE)
def last_change(seed: int, share: float, host: int, index: int, step: int) -> int:
    """The step of the product's last change at or before ``step``; 0 when it never changed.

    Walks back from ``step``: about ``1 / share`` draws on average, at most ``step``.
    """
    for earlier in range(step, 0, -1):
        if changes_at(seed, share, host, index, earlier):
            return earlier
    return 0


def changed_product(seed: int, share: float, host: int, index: int, step: int) -> Product:
    """Product ``index`` of ``host`` as its change at ``step`` left it (step 0: as generated).

    Each change starts from the state the one before left, so the price always moves: every page
    that shows the product with its price (its own, the listings, the home page) changes with it.
    The walk back through the changes stops at the newest state computed before (a site's clock
    only moves on), so a site that has run a day of 60 s steps does not replay 1,440 of them per page.
    """
    key = (seed, share, host, index)
    known_step, known = _newest.get(key, (0, None))
    if known is None or known_step > step:  # a state older than the newest known: from the start
        known_step, known = 0, make_product(seed, host, index)
    chain, at = [], step
    while at > known_step:
        chain.append(at)
        at = last_change(seed, share, host, index, at - 1)
    product = known
    for change in reversed(chain):
        product = _changed(product, Dice(f"dualplane-sample:{seed}:{host}:change:{index}:{change}:state"))
    if chain:
        _newest[key] = (step, product)
    return product


def _changed(product: Product, dice: Dice) -> Product:
    """Another price (5-20 % up or down, at least a whole unit) and, every other time, another stock."""
    cents = int(product.price * 100)
    delta = max(100, cents * dice.between(5, 20) // 100 // 100 * 100)
    cents = cents + delta if dice.chance(0.5) or cents - delta < 100 else cents - delta
    product = dataclasses.replace(product, price=Decimal(cents).scaleb(-2))
    if dice.chance(0.5):
        availability = dice.pick([a for a in AVAILABILITIES if a != product.availability])
        stock_left = dice.between(1, 5) if availability == "LimitedAvailability" else None
        product = dataclasses.replace(product, availability=availability, stock_left=stock_left)
    return product


class CatalogAt(Catalog):
    """The catalogue as it stands at ``step``; remembers the newest change among the products read.

    One per rendered page: :attr:`latest_change` then says when what the page shows last changed.
    """

    def __init__(self, spec: SiteSpec, changes: Changes, step: int) -> None:
        super().__init__(spec)
        self.changes = changes
        self.step = step
        self.latest_change = 0

    def product(self, host: int, index: int) -> Product:
        changed = self.change_of(host, index)
        self.latest_change = max(self.latest_change, changed)
        return changed_product(self.spec.seed, self.changes.share, host, index, changed)

    def partner_product(self, host: int, index: int) -> Product | None:
        # An article names its partner product, without price or stock: no change of it shows there.
        return Catalog(self.spec).partner_product(host, index)

    def change_of(self, host: int, index: int) -> int:
        """The step of the product's last change at or before this catalogue's step (0: never)."""
        return last_change(self.spec.seed, self.changes.share, host, index, self.step)

    def modified_at(self, host: int, index: int) -> datetime:
        return self.changes.modified_at(self.change_of(host, index))


def offer(product: Product) -> tuple[Decimal, str, int | None]:
    """What a change may alter: price, availability and the stock left."""
    return product.price, product.availability, product.stock_left


def etag(body: bytes) -> str:
    """A strong entity tag for ``body``: the same bytes, the same tag, in every process."""
    return '"' + hashlib.sha256(body).hexdigest()[:24] + '"'


def http_date(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)


def with_validators(headers: Mapping[str, str], body: bytes, modified: datetime) -> dict[str, str]:
    """``headers`` plus the ``ETag`` of ``body`` and ``Last-Modified: modified``."""
    return {**headers, "ETag": etag(body), "Last-Modified": http_date(modified)}


def not_modified(
    headers: Mapping[str, str], if_none_match: str | None, if_modified_since: str | None
) -> bool:
    """Whether a GET with these conditions gets a 304 from a 200 response with ``headers``.

    RFC 9110, section 13.2.2: ``If-None-Match`` decides when present (weak comparison, ``*``
    matches any tag); only without it does ``If-Modified-Since`` count, and a date that cannot be
    parsed is ignored.
    """
    if if_none_match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        current = headers.get("ETag")
        return current is not None and ("*" in tags or current.removeprefix("W/") in tags)
    modified = headers.get("Last-Modified")
    if if_modified_since is None or modified is None:
        return False
    try:
        since = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError, IndexError):
        return False
    if since.tzinfo is None:
        return False  # not an HTTP date (those are always GMT)
    return parsedate_to_datetime(modified) <= since
