"""Whether a page is a product page, and the product it shows: every source in order of trust.

Sources, most trusted first: JSON-LD, microdata, RDFa, OpenGraph/product meta tags (all
:mod:`~data_plane.extract.structured.schema_org`), the page's embedded state JSON
(:mod:`~data_plane.extract.product.embedded_state`), then markup heuristics
(:mod:`~data_plane.extract.product.product_markup`). Each field takes the first source that has it and
records which one that was; an item id in the page's own URL that the page also prints is the last
resort for the SKU (:mod:`~data_plane.extract.product.url_sku`), then the id its cart form posts, where the
page prints that (:func:`~data_plane.extract.product.cart_forms.ordered_ids`). An item number printed next to
its label ("Art.-Nr. 4711") overrides a published ``sku``, since the page shows it to the buyer now.
Availability weighs the product's own stock signals
(:mod:`~data_plane.extract.product.availability_decision`): a published state stands unless a visible
statement about the product contradicts it, and contradicting signals give none.
"""

from __future__ import annotations

from dataclasses import replace

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup, text
from dualplane.data_plane.extract.product.availability_decision import decide
from dualplane.data_plane.extract.product.cart_forms import ordered_ids
from dualplane.data_plane.extract.product.embedded_state import embedded_product
from dualplane.data_plane.extract.product.product_area import own_text
from dualplane.data_plane.extract.product.product_markup import MarkupProduct, markup_product
from dualplane.data_plane.extract.product.product_tracking import tracked_sku
from dualplane.data_plane.extract.product.url_sku import printed_id, printed_url_id
from dualplane.data_plane.extract.structured.schema_org import structured_product
from dualplane.data_plane.extract.structured.structured import Structured

LISTED_PRODUCTS = 3
"""Structured data naming this many different products, none of them the page's heading, is a listing's."""
LISTED_BESIDE_HEADING = 2
"""As many as this suffice when the page has an ``<h1>`` naming none of them (a home page's two featured
products); without one, two names may be one product published twice under different names."""
EMBEDDED_FIELDS = ("price", "currency", "availability", "sku")
"""The embedded state is read only when one of these is still missing after structured data."""


def extract_product(
    page: Markup, data: Structured, base_url: str, *, heuristics: bool = True, html: str = ""
) -> ProductFields | None:
    """The page's product, or ``None`` when the page is not about one product.

    A page is a product page when its structured data declares a Product (or ``og:type`` product), or,
    with ``heuristics``, when its markup shows a price together with a SKU, an element about stock or
    an add-to-cart control (a stock phrase in running text is not enough: articles quote them), or no
    price but an enabled control of a form that posts one product to the cart; with
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
    # The markup's own availability is in the decision already: what it settles alone must not fill in
    # where the signals together settled on none.
    fields = _visible_first(fields, shown).or_else(shown.fields.replaced(None, availability=None))
    if fields.sku is None and html and (sku := tracked_sku(html)):
        fields = fields.replaced("embedded-json", sku=sku)
    main = page.main(headed=True)
    shown_text = text(main) if fields.sku is None else ""
    name = fields.name or shown.fields.name
    if fields.sku is None and (sku := printed_url_id(base_url, shown_text, name)):
        fields = fields.replaced("markup", sku=sku)  # the page prints it: shown, as a labelled one is
    posted = ordered_ids(main) if fields.sku is None else ()
    # Printed where a buyer sees it: shops hand their cart's internal id to scripts in hidden elements
    # (Nosto's display:none product tag on a Magento page), which the URL's ids are not.
    if posted and (sku := printed_id(posted, own_text(main, None, shown=True), name)):
        fields = fields.replaced("markup", sku=sku)  # the id its cart knows it by, printed on the page
    return fields


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
    if shown.ordered:  # no price printed, but a form that orders one product: its stock only, if enabled
        return shown.signals.button == "enabled"
    return fields.price is not None and (
        fields.sku is not None or shown.buy_button or shown.signals.statement is not None
    )


def _visible_first(fields: ProductFields, shown: MarkupProduct) -> ProductFields:
    """``fields`` with the availability the product's signals settle on and the labelled item number
    put before a published one.

    The published availability (structured data, else the embedded state, else an ``itemprop``) is
    weighed with what the markup shows (:func:`~data_plane.extract.product.availability_decision.decide`). Its
    source stays when it stands; a state only the markup gives, or a refinement ("Nur noch 2"), is the
    markup's; with none, the source names what was seen (the published value's, else the markup's).
    """
    own, source = fields.availability, fields.source_of("availability")
    published = own if own is not None else shown.signals.published
    decided = decide(replace(shown.signals, published=published))
    if decided is not None and decided != own:
        fields = fields.replaced("markup", availability=decided)
    elif decided is None:
        fields = fields.replaced(source or shown.fields.source_of("availability"), availability=None)
    if shown.labelled_sku is not None and fields.sku not in (None, shown.labelled_sku):
        fields = fields.replaced("markup", sku=shown.labelled_sku)
    return fields
