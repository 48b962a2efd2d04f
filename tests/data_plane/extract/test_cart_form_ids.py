"""The id a product's cart form posts is its item number where the page prints it
(:func:`~data_plane.extract.product.cart_forms.ordered_ids`, the SKU's last resort).

Prompted by greatmusicproductsonline.com (dev split): ``<input type="hidden" name="id" value="VBAG">`` in
the form that posts to ``/cart.asp``, printed as "Product ID: VBAG" (no digit, so no labelled item number).
It also read stupid.com (dev, 3dcart: ``itemid`` EMERMUS beside the internal ``item_id`` 3060, printed as
"Part Number: EMERMUS") and gaggifts.com (test, "Item Id: GLOWROLL"), neither labelled with a SKU.
"""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.cart_forms import ordered_ids
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/proddetail.asp?prod=1"


def product_of(html: str) -> ProductFields | None:
    return extract_product(Markup(html), read_structured(html, URL), URL, html=html)


def cart_form(*fields: tuple[str, str], action: str = "/cart.asp") -> str:
    inputs = "".join(f'<input type="hidden" name="{name}" value="{value}">' for name, value in fields)
    return f'<form action="{action}" method="post">{inputs}<input type="submit" value="Buy"></form>'


def page(body: str, shown: str = "") -> str:
    return f"""<html><body><main><div class="product"><h1>Velvet Drawstring Bag</h1>{shown}
    <p class="price">$1.38</p>{body}</div></main></body></html>"""


@pytest.mark.parametrize(
    ("form", "shown", "sku"),
    [
        (cart_form(("id", "VBAG")), "<p>Product ID: VBAG</p>", "VBAG"),  # capitals, no digit
        # 3dcart posts its internal id and the item code: the page prints the shop's
        (cart_form(("item_id", "3060"), ("itemid", "EMERMUS")), "<p>Part Number: EMERMUS</p>", "EMERMUS"),
        (cart_form(("product", "17061")), "", None),  # Magento's entity id, printed nowhere
        # printed only in a hidden element for a script (Nosto's product tag): not shown to a buyer
        (cart_form(("product", "17061")), '<div style="display:none"><span>17061</span></div>', None),
        (cart_form(("id", "add")), "<p>add</p>", None),  # a lower-case word is a mode, not an item
        (cart_form(("id", "42")), "<p>Size 42</p>", None),  # too short: counts and sizes
    ],
)
def test_the_posted_id_is_the_sku_only_where_a_buyer_sees_it(form: str, shown: str, sku: str | None) -> None:
    product = product_of(page(form, shown))
    assert product is not None
    assert product.sku == sku
    if sku is not None:
        assert product.source_of("sku") == "markup"


def test_a_labelled_item_number_comes_before_the_posted_id() -> None:
    shown = "<p>SKU: BAG-7731</p><p>VBAG</p>"
    product = product_of(page(cart_form(("id", "VBAG")), shown))
    assert product is not None
    assert product.sku == "BAG-7731"


def test_other_products_forms_post_no_id_of_this_product() -> None:
    related = f'<aside class="related-products">{cart_form(("id", "RB-2000"))}<p>RB-2000</p></aside>'
    markup = Markup(page(related))
    assert ordered_ids(markup.main(headed=True)) == ()
    product = product_of(page(related))
    assert product is None or product.sku is None


def test_forms_posting_different_ids_are_a_listings_cards() -> None:
    cards = "".join(f"<div>{cart_form(('id', sku))}<p>{sku}</p></div>" for sku in ("AB1234", "CD5678"))
    assert ordered_ids(Markup(page(cards)).main(headed=True)) == ()
