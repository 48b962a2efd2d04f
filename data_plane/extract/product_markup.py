"""A product read from plain markup, for pages whose structured data is missing or incomplete.

The price and the area it sits in come from :mod:`data_plane.extract.product_area`. Within that
area, SKU, GTIN, brand and availability come from ``itemprop`` attributes, telling class names, then
labels and phrases ("SKU:", "EAN:", "Brand:", "In stock", "Only 3 left").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborNode

from data_plane.extract.availability import Availability, availability_in, availability_of
from data_plane.extract.fields import ProductFields
from data_plane.extract.identifiers import gtin_of, sku_of
from data_plane.extract.markup import Markup, innermost, line, words
from data_plane.extract.prices import currency_code, find_currency
from data_plane.extract.product_area import area_and_price, elsewhere, own_text
from data_plane.extract.schema_org import absolute_urls

STOCK_WORDS = frozenset({"stock", "availability", "inventory", "instock", "outofstock", "stockstatus"})
_BUY = re.compile(
    r"add[\s_-]*to[\s_-]*(?:cart|basket|bag|trolley)|buy[\s_-]*now|in den warenkorb|ajouter au panier", re.I
)
_SKU_LABEL = re.compile(
    r"\b(?:SKU|Item\s*(?:No\.?|number|#)|Art(?:ikel)?\.?[\s-]*(?:Nr|No)\.?|Artikelnummer|Product\s*(?:code|ID)"
    r"|Style\s*(?:No\.?|#))\s*[:#]?\s*([A-Za-z0-9][\w\-./]{1,63})",
    re.I,
)
_GTIN_LABEL = re.compile(
    r"\b(?:GTIN(?:-?1[234]|-?8)?|EAN(?:-?13)?|UPC|ISBN(?:-?13)?)\s*[:#]?\s*([\d\s-]{8,20})\b", re.I
)
_BRAND_LABEL = re.compile(
    r"\b(?:Brand|Marke|Marque|Manufacturer)\s*:\s*([^\n·|•;,]{1,60}?)\s*(?=[\n·|•;,]|$)", re.I
)


@dataclass(frozen=True)
class MarkupProduct:
    """What markup says about a product, and whether the page looks like a product page at all."""

    fields: ProductFields
    buy_button: bool


def markup_product(page: Markup, base_url: str, *, declared: bool = False) -> MarkupProduct:
    """The product the page's markup shows; empty fields where it shows nothing recognisable.

    Unless the page ``declared`` a product in structured data, a page without a price is not read
    any further: most pages are not product pages, and this keeps them cheap.
    """
    main = page.main()
    scope, price = area_and_price(main)
    if price is None and not declared:
        return MarkupProduct(ProductFields(), buy_button=False)
    area_text = own_text(scope, None)
    currency = price.currency if price else None
    if price is not None and currency is None:
        currency = _itemprop(scope, "priceCurrency") or currency_code(
            page.meta("product:price:currency") or ""
        )
        currency = currency or find_currency(area_text)
    fields = ProductFields(
        name=_name(page, scope),
        price=price.amount if price else None,
        currency=currency,
        availability=_availability(scope, area_text),
        sku=_sku(scope, area_text),
        gtin=_gtin(scope, area_text),
        brand=_brand(scope, area_text),
        images=tuple(_images(page, scope, base_url)),
    )
    return MarkupProduct(fields, buy_button=_has_buy_button(scope))


def _name(page: Markup, scope: LexborNode) -> str | None:
    heading = scope.css_first("h1") or page.main().css_first("h1")
    name = line(heading) if heading is not None else ""
    return name or page.meta("og:title") or None


def _availability(scope: LexborNode, area_text: str) -> Availability | None:
    for node in scope.css("[itemprop=availability]"):
        value = node.attributes.get("href") or node.attributes.get("content") or line(node)
        if value:
            return availability_of(value)
    stock = [node for node in scope.css("[class], [id]") if STOCK_WORDS & words(node)]
    for node in innermost(stock):
        found = availability_in(line(node), loose=True)
        if found is not None:
            return found
    for text_line in area_text.splitlines():
        found = availability_in(text_line)
        if found is not None:
            return found
    return None


def _sku(scope: LexborNode, area_text: str) -> str | None:
    for node in scope.css("[itemprop=sku], [data-sku]"):
        sku = sku_of(node.attributes.get("content") or node.attributes.get("data-sku") or line(node))
        if sku:
            return sku
    for node in innermost(node for node in scope.css("[class*=sku i], [id*=sku i]") if "sku" in words(node)):
        sku = sku_of(line(node))
        if sku:
            return sku
    match = _SKU_LABEL.search(area_text)
    return match.group(1).rstrip(".") if match else None


def _gtin(scope: LexborNode, area_text: str) -> str | None:
    for node in scope.css("[itemprop^=gtin], [itemprop=isbn]"):
        gtin = gtin_of(node.attributes.get("content") or line(node))
        if gtin:
            return gtin
    for match in _GTIN_LABEL.finditer(area_text):
        gtin = gtin_of(match.group(1).strip())
        if gtin:
            return gtin
    return None


def _brand(scope: LexborNode, area_text: str) -> str | None:
    node = scope.css_first("[itemprop=brand]")
    if node is not None:
        name = node.css_first("[itemprop=name]")
        value = (name.attributes.get("content") or line(name)) if name else None
        value = value or node.attributes.get("content") or line(node)
        if value:
            return value
    match = _BRAND_LABEL.search(area_text)
    return match.group(1).strip() if match else None


def _images(page: Markup, scope: LexborNode, base_url: str) -> list[str]:
    og_images = list(absolute_urls([page.meta("og:image")] if page.meta("og:image") else [], base_url))
    if og_images:
        return og_images
    image = scope.css_first("[itemprop=image]") or scope.css_first("img[src]")
    source = image.attributes.get("src") or image.attributes.get("content") if image else None
    return list(absolute_urls(source, base_url))


def _itemprop(scope: LexborNode, name: str) -> str | None:
    node = scope.css_first(f"[itemprop={name}]")
    return currency_code(node.attributes.get("content") or line(node)) if node else None


def _has_buy_button(scope: LexborNode) -> bool:
    """An add-to-cart control for this product (not one on a related item's card)."""
    for node in scope.css("button, input[type=submit], a, [class*=cart i], [id*=cart i]"):
        if elsewhere(node, scope):
            continue
        label = " ".join(
            filter(None, (line(node), node.attributes.get("value"), node.attributes.get("class"),
                          node.attributes.get("id"), node.attributes.get("name")))
        )  # fmt: skip
        if _BUY.search(label):
            return True
    return False
