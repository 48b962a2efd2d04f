"""A product label from what a page declares (JSON-LD, microdata, RDFa, OpenGraph), without the extractor.

Self-supervision: a shop that publishes its product for search engines states price, currency, item
number and stock there; that statement is the label, and the extractor is scored on a copy of the page
with the declaration removed (``markup_removed.py``). This reads the declaration with extruct only and
shares nothing with ``data_plane.extract``, so a fault of the extractor's own readers cannot become a
label.

A label is only made where the declaration is unambiguous: one product (several differently named
Product nodes are a listing or related items), and for the price one offer price (variants at several
prices and ``AggregateOffer`` ranges state no single price, so the label leaves the price out, as it
leaves out a value it cannot read as a plain number or a stock state it cannot map).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

import extruct

_STOCK = {
    "instock": "in_stock", "onlineonly": "in_stock", "in stock": "in_stock",
    "outofstock": "out_of_stock", "soldout": "out_of_stock", "discontinued": "out_of_stock",
    "out of stock": "out_of_stock", "oos": "out_of_stock",
    "limitedavailability": "limited",
    "preorder": "preorder", "presale": "preorder",
}  # fmt: skip
_PLAIN_AMOUNT = re.compile(r"^\d+(?:\.\d+)?$")
_NESTING = ("@graph", "mainEntity", "itemOffered")
PRODUCT_TYPES = ("Product", "ProductGroup", "IndividualProduct", "ProductModel", "Book", "Vehicle")


def declared_label(html: str, url: str) -> dict[str, str] | None:
    """The label the page's declared product gives (``price``, ``currency``, ``sku``, ``availability``,
    each only when stated unambiguously), ``{}`` for a page that declares no product, ``None`` for one
    whose declaration is ambiguous (several products)."""
    syntaxes = ["json-ld", "microdata", "rdfa", "opengraph"]
    data = extruct.extract(html, base_url=url, syntaxes=syntaxes, uniform=True, errors="ignore")
    nodes = [
        node for syntax in ("json-ld", "microdata", "rdfa") for node in _products(data.get(syntax) or [])
    ]
    names = {" ".join(str(_first(node.get("name")) or "").split()).casefold() for node in nodes} - {""}
    if len(names) > 1:
        return None
    label: dict[str, str] = {}
    for node in nodes:
        for key, value in _node_label(node).items():
            label.setdefault(key, value)
    og = _opengraph(data.get("opengraph") or [])
    for key, value in og.items():
        label.setdefault(key, value)
    return label


def _products(items: list[Any]) -> Iterator[dict[str, Any]]:
    """Product nodes anywhere in the items (a ``@graph``, a ``mainEntity``, an offer's ``itemOffered``)."""
    stack = list(items)
    while stack:
        item = stack.pop(0)
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if any(kind in PRODUCT_TYPES for kind in _types(item)):
                yield item
                continue
            stack.extend(value for key, value in item.items() if key in _NESTING)


def _types(node: dict[str, Any]) -> list[str]:
    kinds = node.get("@type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return [str(kind).rsplit("/", 1)[-1].rsplit(":", 1)[-1] for kind in kinds if kind]


def _node_label(node: dict[str, Any]) -> dict[str, str]:
    label: dict[str, str] = {}
    offers = _offers(node)
    prices = {price for offer in offers if (price := _amount(offer.get("price"))) is not None}
    if len(prices) == 1 and not any("AggregateOffer" in _types(offer) for offer in offers):
        label["price"] = format(prices.pop(), "f")
        currencies = {str(_first(o.get("priceCurrency")) or "").strip().upper() for o in offers} - {""}
        if len(currencies) == 1 and re.fullmatch(r"[A-Z]{3}", currency := currencies.pop()):
            label["currency"] = currency
    states = {state for offer in offers if (state := _stock(offer.get("availability")))}
    if len(states) == 1:
        label["availability"] = states.pop()
    sku = _first(node.get("sku"))  # not an MPN: the labelling rules take the shop's own item number
    if isinstance(sku, str | int) and str(sku).strip():
        label["sku"] = str(sku).strip()
    return label


def _offers(node: dict[str, Any]) -> list[dict[str, Any]]:
    offers = node.get("offers")
    offers = offers if isinstance(offers, list) else [offers]
    flat: list[dict[str, Any]] = []
    for offer in offers:
        if isinstance(offer, dict):
            flat.append(offer)
            inner = offer.get("offers")  # an AggregateOffer's own offers
            inner = inner if isinstance(inner, list) else [inner]
            flat += [item for item in inner if isinstance(item, dict)]
    return flat


def _amount(value: Any) -> Decimal | None:
    value = _first(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _PLAIN_AMOUNT.match(value.strip()):
        return None
    try:
        amount = Decimal(value.strip()).normalize()
    except InvalidOperation:
        return None
    return amount if amount > 0 else None


def _stock(value: Any) -> str | None:
    value = _first(value)
    if not isinstance(value, str):
        return None
    return _STOCK.get(value.strip().rsplit("/", 1)[-1].replace("_", "").lower())


def _opengraph(items: list[Any]) -> dict[str, str]:
    tags: dict[str, str] = {}
    for item in items:
        for key, value in item.items() if isinstance(item, dict) else []:
            if isinstance(value, str):
                tags.setdefault(key.rsplit("/", 1)[-1] if key.startswith("http") else key, value)
    label: dict[str, str] = {}
    if (price := _amount(tags.get("product:price:amount") or tags.get("og:price:amount"))) is not None:
        label["price"] = format(price, "f")
        currency = (tags.get("product:price:currency") or tags.get("og:price:currency") or "").upper()
        if re.fullmatch(r"[A-Z]{3}", currency):
            label["currency"] = currency
    if state := _stock(tags.get("product:availability") or tags.get("og:availability")):
        label["availability"] = state
    if sku := (tags.get("product:retailer_item_id") or "").strip():
        label["sku"] = sku
    return label


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value
