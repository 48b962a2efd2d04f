"""Add-to-cart controls known by their form, not their label (:mod:`~data_plane.extract.product.cart_forms`).

Prompted by sales.starcitygames.com (dev split): a form that posts ``product=725292`` to ``/cart.php``,
submitted by a control labelled "Buy!", on a page whose price digits are CSS sprites ("72 in stock"
below "Price: $" is a count). It also read a test-split page no rule was written on (sciencebob).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.cart_forms import cart_form_submits
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/725292"


def product_of(html: str) -> ProductFields | None:
    return extract_product(Markup(html), read_structured(html, URL), URL, html=html)


def cart_form(submit: str, *, method: str = "post", action: str = "/cart.php", field: str = "product") -> str:
    return f"""<form action="{action}" method="{method}"><input type="text" name="qty" value="1">
    <input type="hidden" name="{field}" value="725292">{submit}</form>"""


def page(body: str, price: str = '<p class="price">2.490 Ft</p>') -> str:
    return f"""<html><body><main><div class="product"><h1>Black Lotus</h1>{price}{body}</div></main>
    </body></html>"""


@pytest.mark.parametrize(
    "submit",
    [
        '<input type="submit" value="Buy!">',
        "<button>Kosárhoz</button>",
        '<button type="submit">Zum Warenkorb hinzufügen</button>',
        '<input type="image" src="/img/b.png" alt="">',
    ],
)
def test_a_form_posting_the_product_to_the_cart_is_an_add_to_cart_control_in_any_words(submit: str) -> None:
    product = product_of(page(cart_form(submit)))
    assert product is not None
    assert (product.price, product.availability) == (Decimal("2490"), "in_stock")


@pytest.mark.parametrize(
    "form",
    [
        cart_form('<input type="submit" value="Update">', field="coupon"),  # a cart page's form: no product
        cart_form('<input type="submit" value="Go">', method="get"),  # searches and filters are GET
        cart_form('<input type="submit" value="Sign up">', action="/newsletter/subscribe"),
        cart_form('<button type="button">+</button>'),  # a quantity step, not the submit
    ],
)
def test_other_forms_are_no_add_to_cart_control(form: str) -> None:
    assert cart_form_submits(Markup(page(form)).main(headed=True)) == []
    assert product_of(page(form)) is None


def test_a_page_printing_no_price_gets_its_stock_from_an_enabled_cart_form() -> None:
    sprites = '<div>Price: <strong>$</strong><span><div class="a">&nbsp;</div></span></div><br>72 in stock'
    product = product_of(page(cart_form('<input type="submit" value="Buy!">'), price=sprites))
    assert product is not None
    assert (product.price, product.currency, product.availability) == (None, None, "in_stock")


def test_a_disabled_cart_form_makes_no_product_page_without_a_price() -> None:
    form = cart_form('<input type="submit" value="Buy!" disabled>')
    assert product_of(page(form, price="")) is None


def test_a_page_without_price_or_cart_form_is_still_no_product_page() -> None:
    assert product_of(page('<button class="wishlist">Merken</button>', price="")) is None
