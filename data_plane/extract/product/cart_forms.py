"""Add-to-cart controls known by where they send the order, not by their label.

A shop's buy control is labelled in the shop's language and words ("Buy!", "Zum Warenkorb hinzufügen",
"Kosárhoz"), which no list of labels covers. What every such control shares is its form: it posts to the
shop's cart (``action="/cart.php"``, ``/cart/add``, ``/basket/add``) with the product's id in a field. The
submit control of such a form is an add-to-cart control whatever it says; its state is read as any
other's (:mod:`~data_plane.extract.product.product_markup`).

A form that posts to the cart without saying which product (a cart page's "Update cart", a coupon box)
adds nothing: the form must carry a product id field (``name="product"``, ``product_id``, ``variant``…).
Search and newsletter forms are sent with ``GET`` or to other paths and never count.

The id such a form posts is the one the shop's cart knows the product by: where the page prints it too
("Product ID: VBAG" beside ``<input type="hidden" name="id" value="VBAG">``), it is the product's item
number (:func:`ordered_ids`). Most carts post an internal id the page never prints (Magento's entity id,
Shopify's variant id), which is then passed over.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from selectolax.lexbor import LexborNode

from dualplane.data_plane.extract.product.identifiers import sku_of
from dualplane.data_plane.extract.product.product_area import elsewhere

_CART_PATH = re.compile(
    r"cart|basket|warenkorb|panier|carrito|carrello|winkelwagen|koszyk|kosar|kosik|varukorg|korg|kurv",
    re.I,
)
"""A cart in a form's ``action`` path (Magento's ``/checkout/cart/add``, Shopify's ``/cart/add``)."""
_PRODUCT_FIELD = re.compile(
    r"^(?:product|item|variant|sku|article|artikel|offer)s?(?:[_\-\[]?id\]?)?$|^id$", re.I
)
"""The name of the field that says which product the form orders (``product``, ``product_id``, ``id``)."""
SUBMITS = "button, input[type=submit i], input[type=image i]"
NOT_SUBMITS = frozenset({"button", "reset"})
"""``<button type=…>`` values that do not send the form (a quantity "+" or a wishlist toggle)."""
MIN_ID_CHARS = 4
"""Shorter values ("1", "42") are printed everywhere as counts and sizes."""


def cart_form_submits(scope: LexborNode) -> list[LexborNode]:
    """The submit controls, within ``scope``, of forms that post one product to the shop's cart."""
    found: list[LexborNode] = []
    for form in scope.css("form"):
        if not _orders_one_product(form):
            continue
        found += [node for node in form.css(SUBMITS) if _submits(node)]
    return found


def ordered_ids(scope: LexborNode) -> tuple[str, ...]:
    """The product ids that the one cart form of ``scope`` posts (other products' forms, in related items
    or a mini-cart, left out) and that look like item numbers: ``MIN_ID_CHARS`` or more, one token,
    holding a digit or written in capitals ("VBAG"; a lower-case word is a mode or an option). A form
    may post two (3dcart's internal ``item_id`` 3060 and the item code ``itemid`` EMERMUS): the page
    prints the shop's. Forms that post different ids are a listing's cards: none."""
    posted = {
        tuple(
            value
            for field in form.css("input")
            if _PRODUCT_FIELD.match(field.attributes.get("name") or "")
            and (value := (field.attributes.get("value") or "").strip())
        )
        for form in scope.css("form")
        if _orders_one_product(form) and not elsewhere(form, scope)
    }
    if len(posted) != 1:
        return ()
    return tuple(value for value in posted.pop() if _looks_like_id(value))


def _looks_like_id(value: str) -> bool:
    if len(value) < MIN_ID_CHARS or sku_of(value) != value:
        return False
    return any(char.isdigit() for char in value) or value.isupper()


def _orders_one_product(form: LexborNode) -> bool:
    attributes = form.attributes
    if (attributes.get("method") or "get").strip().lower() != "post":
        return False
    if not _CART_PATH.search(urlsplit((attributes.get("action") or "").strip()).path):
        return False
    return any(
        _PRODUCT_FIELD.match(field.attributes.get("name") or "") for field in form.css("input, select")
    )


def _submits(node: LexborNode) -> bool:
    if node.tag != "button":
        return True
    return (node.attributes.get("type") or "submit").strip().lower() not in NOT_SUBMITS
