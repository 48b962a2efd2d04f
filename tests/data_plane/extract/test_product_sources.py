"""Which source a product field comes from, and when what the page shows beats what it publishes."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from dualplane import schemas
from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.record import extract_record
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/1"
JSON_LD = """<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product",
"name": "Blue Mug", "sku": "FEED-77", "offers": {"@type": "Offer", "price": "15.50", "priceCurrency": "GBP",
"availability": "https://schema.org/InStock"}}</script>"""


def product_of(html: str) -> ProductFields | None:
    return extract_product(Markup(html), read_structured(html, URL), URL, html=html)


def test_every_field_names_its_source() -> None:
    html = f"""<html><head>{JSON_LD}<meta property="og:type" content="product">
    <meta property="product:brand" content="Potter"></head><body><main><h1>Blue Mug</h1>
    <p class="price">£15.50</p><p>EAN: 4006381333931</p></main></body></html>"""
    product = product_of(html)
    assert product is not None
    assert dict(product.sources) == {
        "price": "json-ld", "currency": "json-ld", "availability": "json-ld", "sku": "json-ld",
        "brand": "opengraph", "gtin": "markup",
    }  # fmt: skip


def test_a_stock_element_against_a_published_in_stock_leaves_none_unless_the_button_settles_it() -> None:
    # A visible "Sold out" beside a published InStock: the page disagrees with itself, so no state is
    # guessed, and the record still says where a state was published. A disabled add-to-cart control
    # sides with the statement, an enabled one with the published state.
    page = f"""<html><head>{JSON_LD}</head><body><main><h1>Blue Mug</h1><p class="price">£15.50</p>
    <p class="stock out-of-stock">Sold out</p>BUTTON</main></body></html>"""
    alone = product_of(page.replace("BUTTON", ""))
    disabled = product_of(page.replace("BUTTON", "<button disabled>Add to cart</button>"))
    enabled = product_of(page.replace("BUTTON", "<button>Add to cart</button>"))
    assert alone is not None and disabled is not None and enabled is not None
    assert (alone.availability, alone.source_of("availability")) == (None, "json-ld")
    assert (disabled.availability, disabled.source_of("availability")) == ("out_of_stock", "markup")
    assert (enabled.availability, enabled.source_of("availability")) == ("in_stock", "json-ld")


def test_a_stock_statement_whose_number_has_its_own_stock_element_is_read_whole() -> None:
    html = f"""<html><head>{JSON_LD}</head><body><main><h1>Blue Mug</h1><p class="price">£15.50</p>
    <div class="stock-count">Még
    <span class="stock-count-color">1</span> darab van készleten</div></main></body></html>"""
    product = product_of(html)
    assert product is not None
    assert (product.availability, product.source_of("availability")) == ("limited", "markup")


def test_a_low_stock_phrase_refines_in_stock_to_limited() -> None:
    html = f"""<html><head>{JSON_LD}</head><body><main><h1>Blue Mug</h1><p class="price">£15.50</p>
    <p>Nur noch 2 Stück auf Lager!</p></main></body></html>"""
    product = product_of(html)
    assert product is not None and product.availability == "limited"


def test_an_out_of_stock_phrase_does_not_override_a_published_in_stock() -> None:
    # Prompted by the held-out figures: "sold out" printed near a product (a size, a related item) said
    # out_of_stock for 2.3 times as many pages as were. A phrase is no statement about the product.
    html = f"""<html><head>{JSON_LD}</head><body><main><h1>Blue Mug</h1><p class="price">£15.50</p>
    <p>Produkt nicht verfügbar</p></main></body></html>"""
    product = product_of(html)
    assert product is not None
    assert (product.availability, product.source_of("availability")) == ("in_stock", "json-ld")


def test_a_stock_sentence_in_a_buy_box_aside_is_read() -> None:
    # A Shopify theme's buy box is an <aside> holding the product's <h1>; its stock note is a paragraph
    # whose first sentence states the stock.
    html = """<html><body><main><section class="single-product">
    <aside class="product-aside"><h1>Blue Mug</h1><p class="price">£15.50</p><p>SKU: MUG-01</p>
    <p>This product is out of stock online. To see if it's available at a
    store near you, please click the Find In Store button.</p></aside></section></main></body></html>"""
    product = product_of(html)
    assert product is not None and product.availability == "out_of_stock"


def test_a_printed_item_number_beats_the_published_one_unless_several_are_printed() -> None:
    shown = f"""<html><head>{JSON_LD}</head><body><main><h1>Blue Mug</h1><p class="price">£15.50</p>
    <p>Art.-Nr.: MUG-01</p></main></body></html>"""
    listed = shown.replace(
        "<p>Art.-Nr.: MUG-01</p>", "<p>Art.-Nr.: MUG-01 (small)</p><p>Art.-Nr.: MUG-02 (large)</p>"
    )
    assert (product_of(shown) or pytest.fail()).sku == "MUG-01"
    assert (product_of(listed) or pytest.fail()).sku == "FEED-77"


def test_a_price_split_into_parts_and_a_buy_box_beside_the_product() -> None:
    html = """<html><body><div id="dp"><div id="center"><h1>Relay Module</h1>
    <span class="a-price"><span class="a-offscreen">$8.99</span><span class="a-price-symbol">$</span>
    <span class="a-price-whole">8<span class="a-price-decimal">.</span></span>
    <span class="a-price-fraction">99</span></span></div>
    <div id="buybox"><div id="availability"><span>In Stock</span></div>
    <input id="add-to-cart-button" type="submit" value="Add to Cart"></div>
    <table><tr><th>ASIN</th><td>B0057OC5O8</td></tr></table></div></body></html>"""
    product = product_of(html)
    assert product is not None
    assert (product.price, product.currency) == (Decimal("8.9900"), "USD")
    assert (product.availability, product.sku) == ("in_stock", "B0057OC5O8")


def test_a_page_with_a_price_but_no_sign_of_selling_it_is_no_product() -> None:
    html = """<html><body><main><h1>Our prices went up</h1><p class="price">From $9.99 a month</p>
    <p>Read why.</p></main></body></html>"""
    assert product_of(html) is None


@pytest.mark.parametrize(
    "control",
    [
        '<input type="image" src="/images/buttons/button_in_cart.png" alt="Add to basket">',
        '<a href="javascript:checkOrder();"><img src="/graphics/AddToCart.png"></a>',
        '<input type="image" src="https://www.paypalobjects.com/en_US/i/btn/btn_buynow_LG.gif" alt="PayPal">',
    ],
)
def test_an_add_to_cart_control_drawn_as_an_image_sells_the_product(control: str) -> None:
    html = f"""<html><body><div id="detail"><h1>Hearing Aid</h1><p>£17.26</p>
    <form>{control}</form></div></body></html>"""
    product = product_of(html)
    assert product is not None
    assert (product.price, product.currency) == (Decimal("17.2600"), "GBP")


def test_page_record_v3_names_each_product_fields_source() -> None:
    unpublished = JSON_LD.replace(',\n"availability": "https://schema.org/InStock"', "")
    html = f"""<html><head>{unpublished}</head><body><main><h1>Blue Mug</h1><p class="price">£15.50</p>
    <p class="stock">Sold out</p></main></body></html>"""
    page = raw_page(html.encode(), URL, fetched_at=datetime(2024, 6, 1, tzinfo=UTC))
    record = extract_record(page, schema_version=3)
    product = record["product"]
    assert (product["price_source"], product["availability_source"]) == ("json-ld", "markup")
    assert (product["sku_source"], product["gtin_source"]) == ("json-ld", None)
    schemas.encode("page_record", record, 3)
    assert "price_source" not in extract_record(page, schema_version=2)["product"]


def test_an_availability_published_on_the_product_itself_counts() -> None:
    # Magento 1 microdata: availability on the Product, beside its name, not in its Offer.
    html = """<html><body><div itemscope itemtype="http://schema.org/Product">
    <meta itemprop="availability" content="in_stock"><h1 itemprop="name">Hard Cider Kit</h1>
    <span itemprop="offers" itemscope itemtype="http://schema.org/Offer"><span itemprop="price">$40.00</span>
    <meta itemprop="priceCurrency" content="USD"></span></div></body></html>"""
    product = product_of(html)
    assert product is not None
    assert (product.availability, product.source_of("availability")) == ("in_stock", "microdata")


def test_a_sold_out_first_variant_is_no_statement_that_the_product_is_sold_out() -> None:
    offers = [
        '{"@type":"Offer","sku":"T-S","price":"20.00","priceCurrency":"USD",'
        '"availability":"https://schema.org/OutOfStock"}',
        '{"@type":"Offer","sku":"T-M","price":"20.00","priceCurrency":"USD",'
        '"availability":"https://schema.org/InStock"}',
    ]

    def page(*listed: str, button: str = "") -> str:
        return f"""<html><head><script type="application/ld+json">{{"@context":"https://schema.org",
        "@type":"Product","name":"Tee","offers":[{",".join(listed)}]}}</script></head>
        <body><h1>Tee</h1>{button}</body></html>"""

    mixed = product_of(page(*offers))
    assert mixed is not None and mixed.availability is None
    with_button = product_of(page(*offers, button="<button>Add to cart</button>"))
    assert with_button is not None and with_button.availability == "in_stock"
    sold_out = product_of(page(offers[0]))
    assert sold_out is not None and sold_out.availability == "out_of_stock"
