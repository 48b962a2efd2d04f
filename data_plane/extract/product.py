"""Whether a page is a product page, and the product it shows: structured data first, markup to fill gaps."""

from __future__ import annotations

from data_plane.extract.fields import ProductFields
from data_plane.extract.markup import Markup
from data_plane.extract.product_markup import markup_product
from data_plane.extract.schema_org import structured_product
from data_plane.extract.structured import Structured


def extract_product(
    page: Markup, data: Structured, base_url: str, *, heuristics: bool = True
) -> ProductFields | None:
    """The page's product, or ``None`` when the page is not about one product.

    A page is a product page when its structured data declares a Product (or ``og:type`` product), or,
    with ``heuristics``, when its markup shows a price together with a SKU or an add-to-cart button.
    Without ``heuristics`` only structured data is read: the extruct-only baseline of the benchmark.
    """
    structured = structured_product(data, base_url)
    declared = bool(data.products) or (data.og("og:type") or "").lower().startswith("product")
    if not heuristics:
        return structured.or_else(ProductFields(name=data.og("og:title"))) if declared else None
    shown = markup_product(page, base_url, declared=declared)
    looks_like_one = shown.fields.price is not None and (shown.fields.sku is not None or shown.buy_button)
    if not declared and not looks_like_one:
        return None
    return structured.or_else(shown.fields)
