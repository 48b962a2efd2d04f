"""How a product page's own price is told from the other amounts near it: shapes seen on real shops."""

# Cyrillic letters here are meant (a Russian shop's labels), not look-alikes of Latin ones:
# ruff: noqa: RUF001

from __future__ import annotations

from decimal import Decimal

import pytest

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.prices import Price, parse_price
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/1"


def product_of(html: str) -> ProductFields | None:
    return extract_product(Markup(html), read_structured(html, URL), URL, html=html)


def price_of(html: str) -> tuple[Decimal | None, str | None]:
    product = product_of(html)
    assert product is not None
    return product.price, product.currency


def test_a_regular_price_class_is_the_current_price_when_nothing_is_on_sale() -> None:
    # Magento without a special price: "regular-price" wraps the price to pay, next to a VAT note.
    html = """<html><body><div class="product-shop"><h1>Digital Piano</h1><div class="price-box">
    <span class="regular-price" id="product-price-7"><span class="price">999,00 €</span></span>
    <p class="tax-info">Barpreis inkl 19%Mwst</p></div>
    <button title="In den Warenkorb">In den Warenkorb</button></div></body></html>"""
    assert price_of(html) == (Decimal("999.0000"), "EUR")


def test_a_percentage_is_no_price() -> None:
    assert parse_price("inkl. 19% MwSt") is None
    assert parse_price("-22% 8,99") == Price(Decimal("8.9900"), None)


def test_a_price_element_labelled_as_the_former_price_or_a_saving_is_skipped() -> None:
    html = """<html><body><h1>Eau Duelle</h1><table><tr><td class="price-info">Retail Price: $125.00</td></tr>
    <tr><td class="price-info">Your Savings: $11.05</td></tr>
    <tr><td class="price-info">Your Price: $113.95</td></tr></table>
    <input type="submit" value="Add to Cart"></body></html>"""
    assert price_of(html) == (Decimal("113.9500"), "USD")


def test_cents_in_an_element_of_their_own_belong_to_the_price() -> None:
    html = """<html><body><div class="product"><h1>Night Stand</h1><div class="priceInformation">
    <span class="currentPrice">69.<sup>99</sup></span></div>
    <button>In den Warenkorb</button><p>Artikelnummer: 1023029000</p></div></body></html>"""
    assert price_of(html)[0] == Decimal("69.9900")


def test_an_amount_and_its_currency_in_blocks_of_their_own_are_read_together() -> None:
    html = """<html><body><div class="item"><div>Артикул: 1163</div><div><b>870</b><div>руб</div></div>
    <a class="buy">В корзину</a></div></body></html>"""
    assert price_of(html) == (Decimal("870.0000"), "RUB")


def test_a_content_block_without_the_heading_is_not_the_main_content() -> None:
    # Some templates call a header block "content"; the product and its <h1> are outside it.
    html = """<html><body><div id="content">Call us 800.420.6088</div><div class="product">
    <h1>Cake Pan</h1><ul><li>Availability: In Stock</li><li>Product ID: 21785</li></ul>
    <ul><li>Our Price</li><li><h2>$30.99</h2></li></ul></div>
    <div class="block products"><span class="title">Fondant</span><span class="price">$47.99</span>
    </div></body></html>"""
    assert Markup(html).main(headed=True).css_first("h1") is not None
    assert Markup(html).main().attributes.get("id") == "content"  # what articles read is unchanged
    assert price_of(html) == (Decimal("30.9900"), "USD")


CARDS = "".join(
    f"""<div class="col-sm-4"><a href="/p/{n}">Shampoo {n}</a><div class="grid-price">${n}.19</div>
    <button>Add to Cart</button></div>"""
    for n in (7, 8, 9)
)


def test_a_page_whose_prices_are_all_in_like_cards_is_a_listing() -> None:
    html = f"""<html><body><div class="category"><h1>Shampoo &amp; Conditioner</h1><div class="row">{CARDS}
    </div></div></body></html>"""
    assert product_of(html) is None


def test_a_grid_of_other_products_does_not_give_the_products_price() -> None:
    html = f"""<html><body><div class="product"><h1>Blue Mug</h1><p>Our price: £15.50</p>
    <button>Add to Cart</button><p>SKU: MUG-01</p></div><div class="row">{CARDS}</div></body></html>"""
    assert price_of(html) == (Decimal("15.5000"), "GBP")


def _microdata_product(name: str, price: str) -> str:
    return f"""<div itemscope itemtype="https://schema.org/Product"><span itemprop="name">{name}</span>
    <div itemprop="offers" itemscope itemtype="https://schema.org/Offer"><span itemprop="price">{price}</span>
    <meta itemprop="priceCurrency" content="GBP"></div></div>"""


def test_structured_data_of_a_grid_whose_products_are_none_of_the_heading_is_a_listing() -> None:
    grid = "".join(
        _microdata_product(name, "10.00") for name in ("Polo Shirt", "Loose Jeans", "Tapered Jeans")
    )
    assert product_of(f"<html><body><h1>New In</h1>{grid}</body></html>") is None
    shown = f"<html><body><h1>Polo Shirt</h1>{grid}</body></html>"
    assert price_of(shown) == (Decimal("10.0000"), "GBP")


def test_two_featured_products_none_of_them_the_heading_make_a_home_page() -> None:
    featured = _microdata_product("Walnut Board", "68.00") + _microdata_product("Maple Neck", "24.00")
    assert product_of(f"<html><body><h1>Tonewoods for luthiers</h1>{featured}</body></html>") is None
    shown = f"<html><body><h1>Walnut Board</h1>{featured}</body></html>"
    assert price_of(shown) == (Decimal("68.0000"), "GBP")
    # Without a heading to compare, two names may be one product published twice: still a product.
    assert product_of(f"<html><body>{featured}</body></html>") is not None


def test_a_hidden_dialog_states_nothing_about_stock() -> None:
    # The page sells the bag (its add-to-cart control is enabled); the hidden dialog changes nothing.
    html = """<html><body><div class="product"><h1>Velvet Bag</h1><p>Product ID: VB-1</p>
    <p class="price">SALE PRICE: $1.38</p><button>Add to Cart</button>
    <div id="notify" style="position:absolute; visibility:hidden">We're really sorry... we don't
    currently have that one in stock</div></div></body></html>"""
    product = product_of(html)
    assert product is not None and product.availability == "in_stock"


def test_a_block_holding_the_heading_is_the_products_own_whatever_its_class() -> None:
    # 1C-Bitrix shops class the product page's block a "card" (Russian shops call a product page so);
    # its price and stock are the page's, while a carousel's cards below, headed by <h3>, stay others'.
    html = """<html><body><div class="detail-card"><h1>Kawai ES100</h1>
    <div class="dc-price"><span class="dc-pr">47 405</span> руб.</div>
    <a class="dc-b-cadd">В корзину</a><div class="dc-deliv"><b>Есть в наличии</b> – осталось 6 шт.</div>
    </div><div class="card"><h3>Yamaha P-45</h3><span class="price">39 990 руб.</span></div></body></html>"""
    product = product_of(html)
    assert product is not None
    assert (product.price, product.currency) == (Decimal("47405.0000"), "RUB")
    assert product.availability == "limited"


def test_a_price_shown_as_a_link_is_another_formats_not_this_ones() -> None:
    # A format picker (Amazon's "Kindle: $26.07 | Paperback: $25.34") links each format's page; the
    # price of what is bought here sits beside the buy button and links nowhere.
    html = """<html><body><div id="dp"><h1>Seven Languages in Seven Weeks</h1>
    <ul><li><a href="/dp/B00AYQNR50"><span>Kindle</span> <span class="a-color-price">$26.07</span></a></li>
    <li><a href="/dp/193435659X" class="a-active"><span>Paperback</span>
    <span class="a-color-price">$25.34</span></a></li></ul>
    <div>Price: <span id="priceblock_ourprice" class="a-color-price">$25.34</span></div>
    <button>Add to Cart</button></div></body></html>"""
    assert price_of(html) == (Decimal("25.3400"), "USD")


def test_a_per_unit_price_and_a_tiers_floor_are_not_the_price() -> None:
    html = """<html><body><div class="item"><h1>Acrylic bead, 32mm, pkg of 6</h1>
    <div class="asLowAs">As Low As <span class="asLowAsPrice">$0.24</span> per bead</div>
    <table><tr><td class="tier1price">$3.46</td><td class="tier2price">$2.49</td></tr></table>
    <button>Add to cart</button></div></body></html>"""
    assert price_of(html) == (Decimal("3.4600"), "USD")
    per_kilo = """<html><body><div class="product"><h1>Kaffee</h1><p><span class="unit-price">12,99 €</span>
    /kg</p><p><span class="price">6,49 €</span></p><button>In den Warenkorb</button></div></body></html>"""
    assert price_of(per_kilo) == (Decimal("6.4900"), "EUR")


@pytest.mark.parametrize(
    "parts",
    [
        '<span class="cur">$</span><span class="price-large">21</span><span class="price-sup">11</span>',
        '<span class="cur">$</span><span class="price-whole">21</span><span class="price-fraction">11</span>',
    ],
)
def test_whole_and_cents_in_elements_of_their_own_are_one_price(parts: str) -> None:
    html = f"""<html><body><div class="product"><h1>Book</h1><div class="buybox">{parts}</div>
    <button>Add to Cart</button></div></body></html>"""
    assert price_of(html) == (Decimal("21.1100"), "USD")


def test_cents_written_with_their_decimal_mark_in_an_element_of_their_own() -> None:
    # lampsplus.com: the mark goes with the cents, "7<span>.99</span>", read "7 .99" once parts are joined.
    html = """<html><body><div class="product"><h1>G9 Bulb</h1><span id="lblPrice">
    <span class="currencySymbol">$</span>7<span class="currencyCents">.99</span></span>
    <button>Add to Cart</button></div></body></html>"""
    assert price_of(html) == (Decimal("7.9900"), "USD")


def test_an_amount_with_a_minus_is_a_saving_not_the_price() -> None:
    # crutchfield.com: "Outlet Savings: -$80.00" in a price-classed line above the price; a range's dash
    # ("$10 - $20") has digits before it and is no minus.
    html = """<html><body><div class="product"><h1>Minidrone</h1>
    <p class="priceSale"><span class="priceSaleInfo">Outlet Savings: -$80.00</span></p>
    <p class="price">$69.99</p><button>Add to Cart</button></div></body></html>"""
    assert price_of(html) == (Decimal("69.9900"), "USD")


@pytest.mark.parametrize(
    "former",
    [
        '<span class="price_column"><span class="strike">$299.99</span></span>',
        '<div class="price-row">$299.99 each (Reg) <span class="strike">$299.99</span></div>',
        '<span class="price"><del>$299.99</del></span>',
        '<span class="price old-price">$299.99</span>',
    ],
)
def test_a_struck_or_former_price_is_not_the_price(former: str) -> None:
    # officedepot.com: the regular price struck through above the sale price; an Amazon e-book page's
    # struck list price $34.95 above its $25.00, a page no rule was written on, was read so too.
    html = f"""<html><body><div class="product"><h1>L-Shaped Desk</h1>{former}
    <span class="price_column">$179.99</span><button>Add to Cart</button></div></body></html>"""
    assert price_of(html) == (Decimal("179.9900"), "USD")


@pytest.mark.parametrize(
    ("former", "to_pay", "expected"),
    [
        (
            '<h5 class="product-price--markdown">$64.95</h5>',
            '<h5 class="product-price">Now $52.00</h5>',
            "52.00",
        ),
        (
            '<span class="price--line-through">8,99 €</span>',
            '<span class="price">jetzt 7,49 €</span>',
            "7.49",
        ),
        ('<span class="price">$80.00</span>', '<span class="price">Sale price: $64.00</span>', "64.00"),
    ],
)
def test_a_price_labelled_as_the_one_to_pay_now_wins_over_an_unmarked_former_one(
    former: str, to_pay: str, expected: str
) -> None:
    # gap.com: "$64.95" in a class that says nothing of a former price, then "Now $52.00"; ebrosia.de's
    # "jetzt 7,49 €" after "8,99 €", a page the rule was not written on, read so too.
    html = f"""<html><body><div class="product"><h1>Linen Shirt</h1>{former}{to_pay}
    <button>Add to Cart</button></div></body></html>"""
    assert price_of(html)[0] == Decimal(expected)


def test_a_sale_label_over_a_saving_is_no_price_to_pay() -> None:
    # officedepot.com: "Sale (Save $120)" after the price $179.99.
    html = """<html><body><div class="product"><h1>L-Shaped Desk</h1><span class="price_column">$179.99</span>
    <span class="price_column red_price">Sale (Save $120)</span><button>Add to Cart</button>
    </div></body></html>"""
    assert price_of(html) == (Decimal("179.9900"), "USD")


def test_a_price_under_a_heading_naming_other_products_is_theirs() -> None:
    # A cross-sell block nobody classed as related items ("Use it with"): its price is another product's.
    html = """<html><body><div class="pdp"><h1>Espresso Machine</h1><p>SKU: EM-1</p>
    <div class="ancillaries"><h3>Use it with</h3><div><span class="price">$40.00</span> Descaler</div></div>
    <p>Our price: $329.99</p><button>Add to cart</button></div></body></html>"""
    assert price_of(html) == (Decimal("329.9900"), "USD")
