"""Products and articles in the markup real platforms write: structured data, plain markup, and none."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from dualplane.data_plane.extract.markup import (
    OLD_PRICE_HINTS,
    OLD_PRICE_WORDS,
    WEAK_OLD_PRICE_WORDS,
    Markup,
    text,
)
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/1"

WOOCOMMERCE = """<!DOCTYPE html><html lang="en-GB"><head><title>Blue Mug - Shop</title></head><body>
<header id="masthead"><div class="site-header-cart"><a class="cart-contents" href="/cart">£0.00</a></div>
</header>
<main id="main" class="site-main"><div id="product-42" class="product type-product instock">
<div class="summary entry-summary"><h1 class="product_title entry-title">Blue Mug</h1>
<p class="price"><del aria-hidden="true"><span class="woocommerce-Price-amount amount"><bdi>
<span class="woocommerce-Price-currencySymbol">&pound;</span>20.00</bdi></span></del>
<ins><span class="woocommerce-Price-amount amount"><bdi>
<span class="woocommerce-Price-currencySymbol">&pound;</span>15.50
</bdi></span></ins></p>
<p class="stock in-stock">3 in stock</p>
<form class="cart"><button type="submit" name="add-to-cart" class="single_add_to_cart_button">Add to
basket</button></form>
<div class="product_meta"><span class="sku_wrapper">SKU: <span class="sku">MUG-BLUE-01</span></span></div>
</div></div>
<section class="related products"><h2>Related</h2><ul class="products"><li class="product">
<span class="price"><span class="woocommerce-Price-amount amount">£9.99</span></span></li></ul></section>
</main></body></html>"""

MAGENTO = """<html><head><title>Trail Shoe</title></head><body>
<header class="page-header"><div class="minicart-wrapper"><span class="price">€0,00</span></div></header>
<main id="maincontent" class="page-main"><div class="product-info-main">
<div class="page-title-wrapper product"><h1 class="page-title"><span class="base">Trail Shoe X2</span>
</h1></div>
<div class="price-box price-final_price">
<span class="old-price"><span data-price-amount="1499" class="price-wrapper">
<span class="price">1.499,00&nbsp;€</span>
</span></span>
<span class="special-price"><span data-price-amount="1299.5" class="price-wrapper">
<span class="price">1.299,50&nbsp;€</span>
</span></span></div>
<div class="product-info-stock-sku"><div class="stock available"><span>Auf Lager</span></div>
<div class="product attribute sku"><strong class="type">SKU</strong>
<div class="value" itemprop="sku">TS-X2-44</div></div>
</div>
<button type="submit" class="action primary tocart"><span>In den Warenkorb</span></button>
</div></main></body></html>"""

SHOPIFY_OPENGRAPH = """<html><head><title>Linen Shirt</title><meta property="og:type" content="product">
<meta property="og:title" content="Linen Shirt"><meta property="og:price:amount" content="49.00">
<meta property="og:price:currency" content="USD"></head><body><main><div class="product__info-container">
<h1 class="product__title">Linen Shirt</h1>
<div class="price price--on-sale"><s class="price-item price-item--regular">$79.00</s>
<span class="price-item price-item--sale">$49.00 USD</span></div>
<button type="submit" name="add" class="product-form__submit">Sold out</button></div></main></body></html>"""

JSON_LD_GRAPH = """<html><head>
<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
{"@type": "WebPage", "@id": "https://shop.example/p/1", "name": "Kettle"},
{"@type": "Product", "name": "Steel Kettle", "sku": 981, "gtin13": "4006381333931", "brand": "Kessel",
 "image": {"@type": "ImageObject", "url": "/img/kettle.jpg"},
 "offers": {"@type": "AggregateOffer", "lowPrice": "39.90", "highPrice": "59.90", "priceCurrency": "eur",
            "offers": [{"@type": "Offer", "availability": "http://schema.org/PreOrder"}]}}]}</script>
<script type="application/ld+json">{ this is not json </script></head><body><h1>Steel Kettle</h1></body>
</html>"""

PRICE_SPECIFICATION = """<html><head><script type="application/ld+json">[{"@context": "http://schema.org",
"@type": "Product", "name": "Desk", "offers": [{"@type": "Offer", "availability": "InStock",
"priceSpecification": {"@type": "UnitPriceSpecification", "price": 1299, "priceCurrency": "GBP"}}]}]
</script></head><body></body></html>"""

RDFA = """<html><body><div vocab="https://schema.org/" typeof="Product"><h1 property="name">Widget</h1>
<div property="offers" typeof="Offer"><span property="price" content="12.50">12,50 €</span>
<meta property="priceCurrency" content="EUR">
<link property="availability" href="https://schema.org/OutOfStock">
</div></div></body></html>"""

LISTING = """<html><head>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "ItemList",
"itemListElement": [{"@type": "ListItem", "position": 1, "item": {"@type": "Product", "name": "A",
"offers": {"@type": "Offer", "price": "5.00", "priceCurrency": "USD"}}}]}</script></head><body><main>
<h1>All lamps</h1><ul class="product-grid"><li class="product-card"><a href="/a">A</a>
<span class="price">$5.00</span>
<button>Add to cart</button></li></ul></main></body></html>"""

PARTIAL_MICRODATA = """<html><body><main><h1>Garden Hose 25 m</h1>
<p>Our price: <span itemprop="price" content="24.99">24,99</span>
 <span itemprop="priceCurrency" content="EUR">€</span></p>
<p>Item No.: GH-25 · EAN: 4006381333931</p><p>Only 2 left in stock!</p></main></body></html>"""

NEWS_MARKUP = """<html><head><title>City council votes on new bike lanes - The Daily</title>
<meta name="description" content="The vote was close."></head><body><nav><a href="/">Home</a></nav>
<article><h1>City council votes on new bike lanes</h1>
<p class="byline">By Jane Roe, Max Mustermann and Ann Lee</p>
<time datetime="2024-03-05T08:30:00+01:00">March 5</time>
<p>The vote was close.</p>
<p>The city council voted on Tuesday evening to approve a network of protected bike lanes across the
downtown core,
after months of heated public debate and several postponed sessions.</p>
<p>Supporters said the lanes would make cycling safer for commuters and children, while opponents argued
that removing
parking would hurt small businesses along the main shopping streets.</p>
<p>Construction is expected to begin next spring and last roughly eighteen months, according to the transport
department, which will publish detailed plans for each street in the coming weeks.</p>
</article><section class="comments"><p class="comment-author">Troll McTroll</p><p>First!</p></section>
<footer>© The Daily</footer></body></html>"""

BLOG_JSON_LD = """<html lang="de"><head><meta name="author" content="Site Team">
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "BlogPosting",
"headline": "Ein Tag am See &amp; mehr", "author": "Erika Musterfrau", "datePublished": "2024-07-01",
"articleBody": "Erster Absatz.\\n\\nZweiter   Absatz."}</script></head><body><h1>Ein Tag am See</h1>
</body></html>"""

META_ONLY_ARTICLE = """<html><head><meta property="og:type" content="article">
<meta property="og:title" content="Rates rise again"><meta name="author" content="Sam Poe">
<meta property="article:published_time" content="Tue, 05 Mar 2024 08:30:00 GMT"></head>
<body><div class="content"><h2>Rates rise again</h2>
<p>The central bank raised its main rate by a quarter point.</p>
</div></body></html>"""


def extract(html: str, **page: Any) -> dict[str, Any]:
    raw = raw_page(html.encode(), URL, fetched_at=datetime(2024, 6, 1, tzinfo=UTC), **page)
    return extract_record(raw, schema_version=2)


def product(html: str) -> dict[str, Any]:
    found = extract(html)["product"]
    assert found is not None, "not recognised as a product page"
    return dict(found)


def test_woocommerce_sale_price_ignores_the_struck_price_basket_and_related_items() -> None:
    found = product(WOOCOMMERCE)
    assert (found["price"], found["currency"]) == (Decimal("15.5000"), "GBP")
    assert (found["name"], found["sku"], found["availability"]) == ("Blue Mug", "MUG-BLUE-01", "in_stock")


def test_an_add_to_cart_form_makes_a_priced_page_a_product_page_without_a_sku() -> None:
    without_sku = WOOCOMMERCE.replace("SKU: ", "").replace('<span class="sku">MUG-BLUE-01</span>', "")

    found = product(without_sku)

    assert (found["price"], found["sku"]) == (Decimal("15.5000"), None)


def test_magento_special_price_and_german_stock_phrase() -> None:
    found = product(MAGENTO)
    assert (found["price"], found["currency"]) == (Decimal("1299.5000"), "EUR")
    assert (found["name"], found["sku"], found["availability"]) == ("Trail Shoe X2", "TS-X2-44", "in_stock")


def test_opengraph_price_with_a_sold_out_button() -> None:
    found = product(SHOPIFY_OPENGRAPH)
    assert (found["price"], found["currency"], found["availability"]) == (
        Decimal("49.0000"),
        "USD",
        "out_of_stock",
    )


def test_json_ld_graph_with_an_aggregate_offer_and_a_broken_block() -> None:
    found = product(JSON_LD_GRAPH)
    assert (found["price"], found["currency"]) == (Decimal("39.9000"), "EUR")
    assert (found["sku"], found["gtin"], found["brand"]) == ("981", "4006381333931", "Kessel")
    assert found["availability"] == "preorder"
    assert found["images"] == ["https://shop.example/img/kettle.jpg"]


def test_price_specification_and_a_short_availability_name() -> None:
    found = product(PRICE_SPECIFICATION)
    assert (found["price"], found["currency"], found["availability"]) == (
        Decimal("1299.0000"),
        "GBP",
        "in_stock",
    )


def test_rdfa_product() -> None:
    found = product(RDFA)
    assert (found["name"], found["price"], found["currency"]) == ("Widget", Decimal("12.5000"), "EUR")
    assert found["availability"] == "out_of_stock"


def test_partial_microdata_labels_and_phrases_fill_in() -> None:
    found = product(PARTIAL_MICRODATA)
    assert (found["price"], found["currency"]) == (Decimal("24.9900"), "EUR")
    assert (found["sku"], found["gtin"], found["availability"]) == ("GH-25", "4006381333931", "limited")


def test_a_listing_of_products_is_not_a_product_page() -> None:
    record = extract(LISTING)
    assert record["product"] is None and record["article"] is None


def test_news_article_from_markup_only() -> None:
    record = extract(NEWS_MARKUP)

    article = record["article"]
    assert record["product"] is None and article is not None
    assert article["headline"] == "City council votes on new bike lanes"
    assert article["authors"] == ["Jane Roe", "Max Mustermann", "Ann Lee"]
    assert article["published_at"] == datetime(2024, 3, 5, 7, 30, tzinfo=UTC)
    assert article["body"].startswith("The city council voted") and "First!" not in article["body"]
    assert article["body"].endswith("in the coming weeks.") and article["body"].count("\n\n") == 2
    assert record["language"] == "en"  # detected: the page declares none


def test_blog_posting_json_ld_wins_over_meta_and_markup() -> None:
    record = extract(BLOG_JSON_LD)

    assert record["article"] == {
        "headline": "Ein Tag am See & mehr",
        "authors": ["Erika Musterfrau"],
        "published_at": datetime(2024, 7, 1, tzinfo=UTC),
        "body": "Erster Absatz.\n\nZweiter Absatz.",
    }
    assert record["language"] == "de"


def test_article_from_opengraph_and_meta_tags() -> None:
    article = extract(META_ONLY_ARTICLE)["article"]

    assert article is not None
    assert (article["headline"], article["authors"]) == ("Rates rise again", ["Sam Poe"])
    assert article["published_at"] == datetime(2024, 3, 5, 8, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("attributes", "dropped"),
    [
        ('class="old-price"', True),
        ('class="price price--old"', True),
        ('class="oldPrice"', True),
        ('class="compare-at-price"', True),
        ('class="compare_at"', True),
        ('class="list-price"', True),
        ('class="ListPrice"', True),
        ('class="price-was"', True),
        ('class="product-msrp"', True),
        ('class="RRP"', True),
        ('id="uvp"', True),
        ('id="price-before-discount"', True),
        ('class="price crossed"', True),
        ('style="text-decoration: line-through"', True),
        ('style="VISIBILITY: hidden"', True),
        # Candidates by substring that name no former price: kept.
        ('class="price bold"', False),
        ('class="product-list price"', False),
        ('class="sold-by price"', False),
        ('class="old-fashioned-mug"', False),
        ('class="price regular-price"', False),
        ('style="display: none"', False),
        ('class="price"', False),
    ],
)
def test_markup_drops_former_prices_by_class_id_or_style_and_keeps_look_alikes(
    attributes: str, dropped: bool
) -> None:
    page = Markup(f"<html><body><main><span {attributes}>€ 19,99</span><span>€ 24,00</span></main></body>")
    shown = text(page.main())
    assert ("19,99" not in shown) is dropped, shown
    assert "24,00" in shown


def test_every_former_price_word_holds_a_hint_the_css_prefilter_looks_for() -> None:
    # The CSS engine picks candidates by these substrings; a word holding none would never be judged.
    for word in OLD_PRICE_WORDS | WEAK_OLD_PRICE_WORDS:
        assert any(hint in word for hint in OLD_PRICE_HINTS), word
