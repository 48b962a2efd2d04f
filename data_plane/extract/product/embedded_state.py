"""A product from the state JSON a page embeds for its scripts: ``__NEXT_DATA__``, Redux and Apollo states,
Shopify's product objects.

Single-page shops render from a JSON state shipped in the page (``<script id="__NEXT_DATA__">``,
``window.__INITIAL_STATE__ = {…}``, Shopify's ``var meta = {"product": …}``); it often holds the SKU
and stock that the HTML only shows after scripts run. The state is searched for the dict that looks
most like the page's product: a price-like value next to a name or a SKU, more so with a currency, a
stock flag and the name the page shows. Amounts in integer minor units (Shopify's cents) are
converted. Only pages already taken for product pages, and missing a field, are read this way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.product.availability import Availability, availability_of
from dualplane.data_plane.extract.product.identifiers import sku_of
from dualplane.data_plane.extract.product.prices import SCALE, amount_of, currency_code

MAX_STATE_CHARS = 2_000_000
MAX_NODES = 20_000
"""Dicts visited per state at most: a state can hold a whole catalogue."""
MARKERS = ("__NEXT_DATA__", "__INITIAL_STATE__", "__PRELOADED_STATE__", "__APOLLO_STATE__", "ProductJson",
           "data-product-json", 'var meta = {"product"')  # fmt: skip
PRICE_KEYS = ("price", "salePrice", "sale_price", "currentPrice", "current_price", "finalPrice",
              "final_price", "priceAmount", "offerPrice", "lowPrice")  # fmt: skip
NAME_KEYS = ("name", "title", "productName", "product_name")
SKU_KEYS = ("sku", "SKU", "itemNumber", "articleNumber", "productCode", "product_code")
CURRENCY_KEYS = ("currency", "priceCurrency", "currencyCode", "currency_code")
STOCK_FLAGS = ("available", "inStock", "in_stock", "isInStock", "is_in_stock")
STOCK_TEXTS = ("availability", "stockStatus", "stock_status", "availabilityStatus")
_ASSIGNMENT = re.compile(
    r"(?:window\.)?(__INITIAL_STATE__|__PRELOADED_STATE__|__APOLLO_STATE__)\s*=\s*(?=[{\[])"
    r"|var (meta) = (?=\{\"product\")"
)
_STATE_SCRIPT = re.compile(
    r"<script\b[^>]*(?:id=[\"']?(?:__NEXT_DATA__|ProductJson[\w-]*)|data-product-json)[^>]*>(.*?)</script>",
    re.I | re.S,
)
_MINOR_UNITS = ("ProductJson", "meta")
"""States whose integer prices are in minor units (Shopify's product objects)."""


def embedded_product(html: str, name: str | None) -> ProductFields:
    """The product the page's embedded state describes (empty when none does), named ``embedded-json``."""
    if not any(marker in html for marker in MARKERS):
        return ProductFields()
    best: tuple[int, ProductFields] | None = None
    for label, state in _states(html):
        for node in _dicts(state):
            scored = _candidate(node, name, minor_units=label in _MINOR_UNITS)
            if scored is not None and (best is None or scored[0] > best[0]):
                best = scored
    return best[1].from_source("embedded-json") if best else ProductFields()


def _states(html: str) -> Iterator[tuple[str, Any]]:
    for match in _STATE_SCRIPT.finditer(html[:MAX_STATE_CHARS]):
        tag = match.group(0)[:200].lower()
        label = "ProductJson" if "productjson" in tag or "data-product-json" in tag else "__NEXT_DATA__"
        state = _loads(match.group(1))
        if state is not None:
            yield label, state
    decoder = json.JSONDecoder()
    for match in _ASSIGNMENT.finditer(html[:MAX_STATE_CHARS]):
        try:
            state, _ = decoder.raw_decode(html, match.end())
        except ValueError:
            continue
        yield match.group(1) or match.group(2), state


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _dicts(state: Any) -> Iterator[dict[str, Any]]:
    """Dicts of ``state`` breadth first (outer objects, e.g. a product before its variants)."""
    queue, visited = [state], 0
    while queue and visited < MAX_NODES:
        node = queue.pop(0)
        if isinstance(node, dict):
            visited += 1
            yield node
            queue.extend(value for value in node.values() if isinstance(value, dict | list))
        elif isinstance(node, list):
            queue.extend(value for value in node if isinstance(value, dict | list))


def _candidate(
    node: dict[str, Any], name: str | None, *, minor_units: bool
) -> tuple[int, ProductFields] | None:
    price, price_currency = _price(node, minor_units)
    sku = next((found for key in SKU_KEYS if (found := sku_of(node.get(key)))), None)
    title = next((node[key] for key in NAME_KEYS if isinstance(node.get(key), str)), None)
    if price is None or (sku is None and title is None):
        return None
    currency = price_currency or _currency(node)
    availability = _availability(node)
    named = bool(name and title and (name.lower() in title.lower() or title.lower() in name.lower()))
    score = 2 * (sku is not None) + 2 * named + (currency is not None) + (availability is not None)
    fields = ProductFields(name=title, price=price, currency=currency, availability=availability, sku=sku)
    return score, fields


def _price(node: dict[str, Any], minor_units: bool) -> tuple[Decimal | None, str | None]:
    """The node's price, and the currency written inside it (``{"value": 12.5, "currency": "EUR"}``)."""
    for key in PRICE_KEYS:
        value, currency = node.get(key), None
        if isinstance(value, dict):
            currency = _currency(value)
            value = value.get("value", value.get("amount"))
        amount = amount_of(value) if not isinstance(value, bool) else None
        if amount is not None and amount > 0:
            if minor_units and isinstance(value, int):
                amount = (amount / 100).quantize(SCALE)
            return amount, currency
    return None, None


def _currency(node: dict[str, Any]) -> str | None:
    for key in CURRENCY_KEYS:
        code = currency_code(node[key]) if isinstance(node.get(key), str) else None
        if code:
            return code
    return None


def _availability(node: dict[str, Any]) -> Availability | None:
    for key in STOCK_FLAGS:
        if isinstance(node.get(key), bool):
            return "in_stock" if node[key] else "out_of_stock"
    for key in STOCK_TEXTS:
        if isinstance(node.get(key), str) and node[key].strip():
            return availability_of(node[key])
    return None
