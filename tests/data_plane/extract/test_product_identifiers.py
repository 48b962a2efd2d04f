"""The product's item number from its own identifiers: published ids, marked elements, its data layer."""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.identifiers import sku_of
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.product.product_tracking import tracked_sku
from dualplane.data_plane.extract.product.url_sku import printed_url_id
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/1"


def product_of(html: str) -> ProductFields:
    product = extract_product(Markup(html), read_structured(html, URL), URL, html=html)
    assert product is not None
    return product


def microdata(product_id: str) -> str:
    return f"""<html><body><div itemscope itemtype="http://schema.org/Product">
    <h1 itemprop="name">Velvet Bag</h1><span itemprop="productID">{product_id}</span>
    <span itemprop="offers" itemscope itemtype="http://schema.org/Offer"><span itemprop="price">1.38</span>
    <meta itemprop="priceCurrency" content="USD"></span></div></body></html>"""


def test_a_published_product_id_is_the_item_number_unless_it_is_a_gtin() -> None:
    # greatmusicproductsonline.com: "Product ID: VBAG" in microdata productID; luckybrand.com publishes
    # its UPC there, and ISBNs come as "isbn:978…".
    assert product_of(microdata("VBAG")).sku == "VBAG"
    assert product_of(microdata("846922083062")).sku is None
    assert product_of(microdata("isbn:9781782399636")).sku is None


def test_an_item_number_in_a_data_attribute() -> None:
    html = """<html><body><div class="product" data-product-sku="TL-4COA"><h1>Sidamo</h1>
    <p class="price">27,90 €</p><button>In den Warenkorb</button></div></body></html>"""
    assert product_of(html).sku == "TL-4COA"


def test_an_element_whose_id_says_item_code() -> None:
    # worldsoccershop.com: <div id="itemcode">#84682</div> above the name.
    html = """<html><body><div id="item_order_area"><div id="itemcode">#84682</div><h1>Lotto Zhero</h1>
    <div class="sale_price">$24.99</div><button>Add to cart</button></div></body></html>"""
    assert product_of(html).sku == "84682"


def lego_page(others: str) -> str:
    return f"""<html><body><div id="main"><div id="product-details"><h1>Death Star</h1>
    <ul id="product-info"><li class="item">Item: <em>10188</em></li></ul>
    <span class="product-price">$399.99</span><button>Add to Bag</button></div>{others}</div></body></html>"""


def thumbnail(code: str) -> str:
    return f"""<li class="product-thumbnail"><h4><span class="item-code">{code}</span>
    <a href="/en-US/{code}">Set {code}</a></h4></li>"""


@pytest.mark.parametrize(
    "others",
    [
        # shop.lego.com: the thumbnails of other sets, each with its item code, in an unnamed list
        f'<div id="more"><ul>{thumbnail("75020")}{thumbnail("79008")}</ul></div>',
        # one other product, in a container about others
        f'<div id="recently-viewed"><ul>{thumbnail("75020")}</ul></div>',
    ],
)
def test_another_products_item_code_is_not_the_sku(others: str) -> None:
    assert product_of(lego_page(others)).sku == "10188"


def test_a_promotion_code_is_no_item_number() -> None:
    html = """<html><body><div class="product"><h1>Mug</h1><p class="price">$9.99</p>
    <p class="promo-code">FREESHIP</p><button>Add to cart</button></div></body></html>"""
    assert product_of(html).sku is None


@pytest.mark.parametrize(
    ("script", "sku"),
    [
        ('var utag_data = {page_type: "Product", product_sku: ["201500014845"]};', "201500014845"),
        ("utag_data = {'product_sku': 'HB095BLK'}", "HB095BLK"),
        ('utag_data = {"product_sku": ["A-1", "B-2", "C-3"]}', None),  # a listing: several
        ("var x = {id: 1};", None),
    ],
)
def test_the_item_number_a_tealium_data_layer_names(script: str, sku: str | None) -> None:
    # calendars.com prints "ID : 201500014845" only; its data layer names it product_sku.
    assert tracked_sku(f"<script>{script}</script>") == sku


def test_the_data_layer_item_number_is_read_only_when_nothing_else_gives_one() -> None:
    page = """<html><head><script>var utag_data = {product_sku: ["201500014845"]};</script></head><body>
    <div class="product"><h1>Diners Puzzle</h1><p class="price">$14.99</p>{shown}
    <button>Add to cart</button></div></body></html>"""
    alone = product_of(page.replace("{shown}", ""))
    shown = product_of(page.replace("{shown}", "<p>SKU: PZL-1</p>"))
    assert (alone.sku, alone.source_of("sku")) == ("201500014845", "embedded-json")
    assert (shown.sku, shown.source_of("sku")) == ("PZL-1", "markup")


def test_an_item_number_shown_after_a_hash() -> None:
    assert sku_of("#84682") == "84682"


@pytest.mark.parametrize(
    ("url", "shown", "sku"),
    [
        (
            "https://www.target.com/p/lego-death-star-10188/-/A-13787174",
            "Item Number (DPCI): 13787174",
            "13787174",
        ),
        ("https://shop.example/products/controller-stand/492398-01/", "Cat: 492398-01 Ref 492398", "492398"),
        ("https://shop.example/seavees-baja/YLS0030.html?cgid=shoes", "Style YLS0030", "YLS0030"),
        # the id in the URL is not printed: a database id, not the shop's item number
        ("https://shop.example/item/eholot-humminbird_10001150.html", "Humminbird echo sounder", None),
        # a year and a short number are never ids
        ("https://shop.example/sun-shades/acura/2016", "Fits 2016 models", None),
    ],
)
def test_the_urls_item_id_when_the_page_prints_it(url: str, shown: str, sku: str | None) -> None:
    assert printed_url_id(url, shown) == sku


def test_an_id_in_the_product_name_is_its_model_number_not_the_item_number() -> None:
    url = "https://www.edel-optics.hu/DG4249-502-13-a-Dolce-and-Gabbana.html"
    assert printed_url_id(url, "Modell: DG4249", name="Dolce & Gabbana DG 4249 502/13") is None
    url = "https://shop.example/item/eholot-788cxi_10001150.html"
    assert printed_url_id(url, "Humminbird 788cxi HD DI", name="Humminbird 788cxi HD DI") is None


def test_the_url_id_is_the_last_resort_for_the_sku() -> None:
    url = "https://shop.example/widgets/WX12345.html"
    html = """<html><body><div class="product"><h1>Widget</h1><p>Catalogue entry WX12345</p>
    <span class="price">$5.00</span><button>Add to cart</button></div></body></html>"""
    product = extract_product(Markup(html), read_structured(html, url), url, html=html)
    assert product is not None
    assert product.sku == "WX12345"
    labelled = html.replace("</h1>", "</h1><p>SKU: AB-1</p>")
    product = extract_product(Markup(labelled), read_structured(labelled, url), url, html=labelled)
    assert product is not None
    assert product.sku == "AB-1"
