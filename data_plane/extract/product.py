"""Whether a page is a product page, and the product it shows: every source in order of trust.

Sources, most trusted first: JSON-LD, microdata, RDFa, OpenGraph/product meta tags (all
:mod:`~data_plane.extract.schema_org`), the page's embedded state JSON
(:mod:`~data_plane.extract.embedded_state`), then markup heuristics
(:mod:`~data_plane.extract.product_markup`). Each field takes the first source that has it and
records which one that was. Two visible statements override published data, since the page shows
them to the buyer now while structured data is often a template's default: an element about stock
("Sold out", "Nur noch 2 auf Lager") over a published availability, and an item number printed next to
its label ("Art.-Nr. 4711") over a published ``sku``.
"""

from __future__ import annotations

from data_plane.extract.embedded_state import embedded_product
from data_plane.extract.fields import ProductFields
from data_plane.extract.markup import Markup
from data_plane.extract.product_markup import MarkupProduct, markup_product
from data_plane.extract.schema_org import structured_product
from data_plane.extract.structured import Structured

LISTED_PRODUCTS = 3
"""Structured data naming this many different products, none of them the page's heading, is a listing's."""
LISTED_BESIDE_HEADING = 2
"""As many as this suffice when the page has an ``<h1>`` naming none of them (a home page's two featured
products); without one, two names may be one product published twice under different names."""
OVERRIDING_PHRASES = ("limited", "out_of_stock")
"""A stock phrase in the product's area stating one of these beats a published "in stock" (see below)."""
EMBEDDED_FIELDS = ("price", "currency", "availability", "sku")
"""The embedded state is read only when one of these is still missing after structured data."""


def extract_product(
    page: Markup, data: Structured, base_url: str, *, heuristics: bool = True, html: str = ""
) -> ProductFields | None:
    """The page's product, or ``None`` when the page is not about one product.

    A page is a product page when its structured data declares a Product (or ``og:type`` product), or,
    with ``heuristics``, when its markup shows a price together with a SKU, an element about stock or
    an add-to-cart control (a stock phrase in running text is not enough: articles quote them); with
    ``heuristics``, not when its structured data names several products and none is its heading (a
    listing). Without ``heuristics`` only structured data is read: the extruct-only baseline of the
    benchmark.
    ``html`` is the page's source, where its embedded state JSON is looked for.
    """
    structured = structured_product(data, base_url)
    declared = bool(data.products) or (data.og("og:type") or "").lower().startswith("product")
    if not heuristics:
        return structured.or_else(ProductFields(name=data.og("og:title"))) if declared else None
    if _lists_products(page, data):
        return None
    shown = markup_product(page, base_url, declared=declared)
    if not declared and not _looks_like_one(shown):
        return None
    fields = structured
    if html and any(getattr(fields, name) is None for name in EMBEDDED_FIELDS):
        fields = fields.or_else(embedded_product(html, fields.name or shown.fields.name))
    return _visible_first(fields.or_else(shown.fields), shown)


def _lists_products(page: Markup, data: Structured) -> bool:
    """True when the structured data describes several products and none is the one the page is about.

    A category or home page often publishes every product of its grid, or the two it features; a product
    page that publishes its related items too names its own product in its ``<h1>``.
    """
    names = {" ".join(str(node.get("name") or "").split()).casefold() for node in data.products} - {""}
    if len(names) < LISTED_BESIDE_HEADING:
        return False
    heading = page.main(headed=True).css_first("h1")
    title = " ".join(heading.text(separator=" ").split()).casefold() if heading is not None else ""
    if len(names) < (LISTED_BESIDE_HEADING if title else LISTED_PRODUCTS):
        return False
    return not any(name in title or (title and title in name) for name in names)


def _looks_like_one(shown: MarkupProduct) -> bool:
    fields = shown.fields
    return fields.price is not None and (
        fields.sku is not None or shown.buy_button or shown.stock_statement is not None
    )


def _visible_first(fields: ProductFields, shown: MarkupProduct) -> ProductFields:
    """``fields`` with the visible stock statement and labelled item number put before published ones.

    A low-stock phrase anywhere in the product's area also refines a published "in stock" to
    ``limited``: it is the same state, stated more precisely. An out-of-stock phrase there ("This product
    is out of stock online.") beats it too: shop templates publish "in stock" whatever the stock.
    """
    stated = shown.stock_statement
    if stated is None and fields.availability == "in_stock" and shown.stock_phrase in OVERRIDING_PHRASES:
        stated = shown.stock_phrase
    if stated is not None and stated != fields.availability:
        fields = fields.replaced("markup", availability=stated)
    if shown.labelled_sku is not None and fields.sku not in (None, shown.labelled_sku):
        fields = fields.replaced("markup", sku=shown.labelled_sku)
    return fields
