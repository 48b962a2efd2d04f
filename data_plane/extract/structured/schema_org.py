"""schema.org Product/Offer and Article nodes, and OpenGraph tags, to normalised product and article fields.

Offers may be one ``Offer``, a list, an ``AggregateOffer`` (its ``lowPrice`` is the price) or carry
the price in a ``priceSpecification``; the first offer with a price wins. A ``ProductGroup``
without offers of its own takes the first variant's.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import urljoin, urlsplit

from dualplane.data_plane.extract.article.dates import parse_datetime
from dualplane.data_plane.extract.fields import ArticleFields, ProductFields
from dualplane.data_plane.extract.product.availability import availability_of
from dualplane.data_plane.extract.product.availability_decision import IN_STOCK_LIKE
from dualplane.data_plane.extract.product.identifiers import gtin_of, sku_of
from dualplane.data_plane.extract.product.prices import amount_of, currency_code
from dualplane.data_plane.extract.structured.structured import SOURCE_KEY, Node, Structured
from dualplane.data_plane.extract.text.text import clip_text

_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_BLOCK_END = re.compile(r"</(?:p|div|h[1-6]|li|blockquote|pre|tr|figcaption)\s*>|<br\s*/?>", re.I)
GTIN_KEYS = ("gtin", "gtin13", "gtin12", "gtin14", "gtin8", "isbn")
_GTIN_PREFIX = re.compile(r"\s*(?:isbn|ean|upc|gtin)", re.I)


def structured_product(data: Structured, base_url: str) -> ProductFields:
    """The page's product from its first JSON-LD, microdata or RDFa Product, then OpenGraph tags."""
    fields = ProductFields()
    for node in data.products:
        candidate = product_from_node(node, base_url)
        if fields.name and candidate.name and fields.name != candidate.name:
            continue  # another product (an accessory, a bundle item): not this page's subject
        fields = fields.or_else(candidate)
    return fields.or_else(product_from_opengraph(data, base_url))


def structured_article(data: Structured) -> ArticleFields:
    """The page's article from its first Article-like node, then OpenGraph ``article:`` tags."""
    fields = article_from_node(data.articles[0]) if data.articles else ArticleFields()
    return fields.or_else(article_from_opengraph(data))


def product_from_node(node: Node, base_url: str) -> ProductFields:
    """One Product node's fields, attributed to the syntax the node was read from."""
    offer = _priced_offer(node)
    currency = _currency(offer) if offer else None
    price = amount_of(_price_value(offer), currency) if offer else None
    published = _availability(node, offer)
    return ProductFields(
        name=text_of(node.get("name")),
        price=price,
        currency=currency,
        availability=availability_of(published) if published else None,
        sku=sku_of(_first(node.get("sku"))) or _offer_sku(node, offer, price) or _product_id(node),
        gtin=_gtin(node) or (_gtin(offer) if offer else None),
        brand=text_of(node.get("brand")),
        images=tuple(absolute_urls(node.get("image"), base_url)),
    ).from_source(node.get(SOURCE_KEY, "json-ld"), seen=("availability",) if published else ())


def article_from_node(node: Node) -> ArticleFields:
    date = node.get("datePublished") or node.get("dateCreated") or node.get("uploadDate")
    return ArticleFields(
        headline=text_of(node.get("headline")) or text_of(node.get("name")),
        authors=tuple(dict.fromkeys(_names(node.get("author")))),
        published_at=parse_datetime(_first(date)),
        body=body_text(node.get("articleBody")),
    )


def product_from_opengraph(data: Structured, base_url: str) -> ProductFields:
    price = data.og("product:price:amount") or data.og("og:price:amount")
    currency = data.og("product:price:currency") or data.og("og:price:currency")
    availability = data.og("product:availability") or data.og("og:availability")
    code = currency_code(currency) if currency else None
    return ProductFields(
        price=amount_of(price, code) if price else None,
        currency=code,
        availability=availability_of(availability) if availability else None,
        sku=sku_of(data.og("product:retailer_item_id")),
        gtin=gtin_of(data.og("product:ean") or data.og("product:upc") or data.og("product:gtin") or ""),
        brand=text_of(data.og("product:brand")),
        images=tuple(absolute_urls(data.og_all("og:image"), base_url)),
    ).from_source("opengraph", seen=("availability",) if availability else ())


def article_from_opengraph(data: Structured) -> ArticleFields:
    authors = [name for name in data.og_all("article:author") if not _is_url(name)]
    return ArticleFields(
        authors=tuple(dict.fromkeys(text for name in authors if (text := text_of(name)))),
        published_at=parse_datetime(data.og("article:published_time")),
    )


def text_of(value: Any) -> str | None:
    """A short text value (a name, a headline): entities decoded, whitespace collapsed."""
    value = _first(value)
    if isinstance(value, dict):
        value = _first(value.get("name"))
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    return " ".join(html.unescape(value).split()) or None


def body_text(value: Any) -> str | None:
    """A long text value: markup dropped, entities decoded, paragraphs kept, spaces within lines collapsed.

    Some CMSs publish ``articleBody`` as the HTML of the body: its block ends become line breaks.
    """
    value = _first(value)
    if not isinstance(value, str):
        return None
    if _TAG.search(value):
        value = _TAG.sub("", _BLOCK_END.sub("\n\n", value))
    lines = (" ".join(line.split()) for line in html.unescape(value).splitlines())
    return clip_text(re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()) or None


def absolute_urls(value: Any, base_url: str) -> Iterator[str]:
    """Image URLs from a string, a list or ``ImageObject`` nodes, made absolute, http(s) only."""
    for item in value if isinstance(value, list) else [value]:
        url = item.get("url") or item.get("contentUrl") if isinstance(item, dict) else item
        url = _first(url)
        if isinstance(url, str) and url.strip():
            absolute = urljoin(base_url, url.strip())
            if urlsplit(absolute).scheme in ("http", "https"):
                yield absolute


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else (None if isinstance(value, list) else value)


def _offers(node: Node) -> Iterator[Node]:
    offers = node.get("offers")
    for offer in offers if isinstance(offers, list) else [offers]:
        if isinstance(offer, dict):
            yield offer
            yield from _offers(offer)  # an AggregateOffer lists its offers
    for variant in node.get("hasVariant") or [] if isinstance(node.get("hasVariant"), list) else []:
        if isinstance(variant, dict):
            yield from _offers(variant)


def _priced_offer(node: Node) -> Node | None:
    offers = list(_offers(node))
    return next((offer for offer in offers if amount_of(_price_value(offer)) is not None), None) or (
        offers[0] if offers else None
    )


def _offer_sku(node: Node, offer: Node | None, price: Decimal | None) -> str | None:
    """The chosen offer's SKU; for an aggregate (a "from" price), the SKU of the offer at that price."""
    if offer is None:
        return None
    sku = sku_of(_first(offer.get("sku")))
    if sku or price is None:
        return sku
    at_price = (o for o in _offers(node) if o.get("sku") and amount_of(_price_value(o)) == price)
    return next((sku_of(_first(o.get("sku"))) for o in at_price), None)


def _price_value(offer: Node) -> Any:
    price = _first(offer.get("price"))
    if price is None:
        price = _first(offer.get("lowPrice"))
    if price is None:
        spec = _first(offer.get("priceSpecification"))
        price = _first(spec.get("price")) if isinstance(spec, dict) else None
    return price


def _currency(offer: Node) -> str | None:
    code = _first(offer.get("priceCurrency"))
    spec = _first(offer.get("priceSpecification"))
    if code is None and isinstance(spec, dict):
        code = _first(spec.get("priceCurrency"))
    return currency_code(code) if isinstance(code, str) else None


def _availability(node: Node, offer: Node | None) -> str | None:
    """The chosen offer's availability, else any offer's, else one published on the Product itself, as
    published (a schema.org URL, or a shop's own word); none when it is "out of stock" and another offer
    of the product is in stock: variants published as offers, the first of them sold out, are no
    statement that the product is (a false "out of stock" is the costliest error).

    schema.org puts availability on the Offer, but some shop templates (Magento 1 microdata among them)
    write ``<meta itemprop="availability">`` on the Product, beside its name.
    """
    value = _first(offer.get("availability")) if offer else None
    value = value or next(
        (_first(o.get("availability")) for o in _offers(node) if o.get("availability")), None
    )
    value = value or _first(node.get("availability"))
    if not isinstance(value, str) or not value.strip():
        return None
    if availability_of(value) == "out_of_stock" and _some_offer_in_stock(node):
        return None  # one variant (a size, a colour) sold out: no statement about the product
    return value.strip()


def _some_offer_in_stock(node: Node) -> bool:
    """True when an offer of ``node`` is published as in stock (or low, or on pre-order)."""
    return any(
        isinstance(value := _first(offer.get("availability")), str)
        and availability_of(value) in IN_STOCK_LIKE
        for offer in _offers(node)
    )


def _product_id(node: Node) -> str | None:
    """The Product's ``productID`` as its item number, when it is not a GTIN (``isbn:…``, a UPC): shops
    without a ``sku`` publish their own item number there (``<span itemprop="productID">VBAG</span>``)."""
    value = _first(node.get("productID"))
    if not isinstance(value, str | int) or gtin_of(value) or _GTIN_PREFIX.match(str(value)):
        return None
    return sku_of(value)


def _gtin(node: Node) -> str | None:
    return next((gtin for key in GTIN_KEYS if (gtin := gtin_of(_first(node.get(key))))), None)


def _names(value: Any) -> Iterator[str]:
    for item in value if isinstance(value, list) else [value]:
        name = text_of(item)
        if name and not _is_url(name):
            yield name


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://", "/"))
