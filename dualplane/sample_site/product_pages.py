"""Shop pages: paginated product listings and product pages in three markup styles.

A third of the products carry schema.org JSON-LD, a third microdata, a third only plain markup
(``<span class="price">€1,299.00</span>``, "Only 3 left"), so extractors meet all three.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from dualplane.sample_site.content import Catalog, Product
from dualplane.sample_site.facets import chosen_facets, facet_nav, is_faceted
from dualplane.sample_site.js_shop import API_PREFIX, is_js_host, js_detail
from dualplane.sample_site.layout import Head, Page, document, format_price, json_ld, site_name

PAGE_SIZE = 20
STOCK_PHRASES = {
    "InStock": "In stock",
    "OutOfStock": "Out of stock",
    "PreOrder": "Available for pre-order",
}


def listing_pages(item_count: int) -> int:
    return max(1, -(-item_count // PAGE_SIZE))


def listing_window(item_count: int, number: int) -> range:
    """The indexes of the items shown on listing page ``number`` (from 1)."""
    first = (number - 1) * PAGE_SIZE
    return range(first, min(item_count, first + PAGE_SIZE))


def stock_phrase(product: Product) -> str:
    if product.availability == "LimitedAvailability":
        return f"Only {product.stock_left} left"
    return STOCK_PHRASES[product.availability]


def pagination(page: Page, current: int, last: int) -> str:
    """Prev/next and a window of page numbers, as query-only links (``?page=3``)."""
    links = []
    if current > 1:
        links.append(page.a(f"?page={current - 1}", "« Previous", rel="prev"))
    for number in sorted({1, last, *range(max(1, current - 2), min(last, current + 2) + 1)}):
        if number == current:
            links.append(f'<span class="current" aria-current="page">{number}</span>')
        else:
            links.append(page.a(f"?page={number}", str(number)))
    if current < last:
        links.append(page.a(f"?page={current + 1}", "Next »", rel="next"))
    return '<nav class="pagination" aria-label="Pages">' + " ".join(links) + "</nav>"


def product_card(page: Page, product: Product) -> str:
    price = format_price(product.price, product.currency, product.comma_decimals)
    # A script-drawn shop shows prices on its product pages only (js_shop.py).
    offer = (
        ""
        if is_js_host(page)
        else (
            f'<span class="card-price">{price}</span> <span class="card-stock">{stock_phrase(product)}</span>'
        )
    )
    return (
        '<li class="product-card">'
        f'<img src="{product.image_path}" alt="{escape(product.name)}" width="240" height="240">'
        f"<h3>{page.a(product.path, product.name)}</h3>{offer}</li>"
    )


def render_product_listing(page: Page, number: int) -> str:
    count = page.catalog.product_count(page.host)
    last, first = listing_pages(count), (number - 1) * PAGE_SIZE
    products = [page.catalog.product(page.host, index) for index in listing_window(count, number)]
    cards = "\n".join(product_card(page, product) for product in products)
    main = (
        f"<h1>All products <small>page {number} of {last}</small></h1>\n"
        f'<p class="result-count">Showing {first + 1}&ndash;{first + len(products)} of {count} products</p>\n'
        f'<ul class="product-grid">\n{cards}\n</ul>\n{pagination(page, number, last)}'
    )
    if is_faceted(page):  # filter links, and the traps beside them (facets.py)
        main += "\n" + facet_nav(page, number, chosen_facets(page.path.partition("?")[2]) or {})
    head = Head(f"All products - page {number}", f"Browse {count} products at {page.name}.")
    return document(page, head, main)


def render_product(page: Page, product: Product) -> str:
    """The product page; its structured data depends on ``product.markup``."""
    listing = product.index // PAGE_SIZE + 1
    crumbs = [page.a("/", "Home"), page.a(f"/products?page={listing}", "Shop")]
    crumbs += [escape(product.category), escape(product.name)]
    main = [
        f'<nav class="breadcrumbs" aria-label="Breadcrumb">{" &rsaquo; ".join(crumbs)}</nav>',
        _detail(page, product),
        f'<section class="description"><h2>Description</h2><p>{escape(product.description)}</p></section>',
        _specs(page, product),
        _related(page, product),
    ]
    head = Head(
        product.name,
        product.description,
        og_type="product",
        image_path=product.image_path,
        extra=_structured_data(page, product) if product.markup == "json-ld" and not is_js_host(page) else "",
    )
    return document(page, head, "\n".join(main))


def _detail(page: Page, product: Product) -> str:
    itemprop = ' itemprop="image"' if product.markup == "microdata" else ""
    image = (
        f'<img class="hero"{itemprop} src="{product.image_path}" alt="{escape(product.name)}" '
        'width="640" height="640">'
    )
    was = ""
    if product.was_price is not None:
        comma_decimals = product.comma_decimals and product.markup != "microdata"
        old_price = format_price(product.was_price, product.currency, comma_decimals)
        was = f'<del class="price-old">{old_price}</del> '
    if is_js_host(page):
        return js_detail(page, product, image)
    if product.markup == "microdata":
        return _microdata(product, image, was)
    price = format_price(product.price, product.currency, product.comma_decimals)
    stock_class = "out-of-stock" if product.availability == "OutOfStock" else "in-stock"
    return (
        '<div class="product-detail">\n'
        f'{image}\n<h1 class="product-title">{escape(product.name)}</h1>\n'
        f'<p class="product-meta">Brand: <strong>{escape(product.brand)}</strong> · '
        f'SKU: <span class="sku">{product.sku}</span></p>\n'
        f'<div class="price-box">{was}<span class="price">{price}</span></div>\n'
        f'<p class="stock {stock_class}">{stock_phrase(product)}</p>\n'
        f'<p class="rating">Rated {product.rating} out of 5 ({product.review_count} reviews)</p>\n'
        f"{_basket_button(product)}\n"
        "</div>"
    )


def _basket_button(product: Product) -> str:
    # As shops do: an item that is out of stock cannot be put in the basket (the extractor reads an
    # enabled button beside "Out of stock" as signals that disagree, and says nothing).
    disabled = " disabled" if product.availability == "OutOfStock" else ""
    return f'<button type="button" class="add-to-cart"{disabled}>Add to basket</button>'


def _microdata(product: Product, image: str, was: str) -> str:
    symbol_price = format_price(product.price, product.currency)
    symbol, amount = symbol_price[0], symbol_price[1:]
    return (
        '<div class="product-detail" itemscope itemtype="https://schema.org/Product">\n'
        f"{image}\n"
        f'<h1 class="product-title" itemprop="name">{escape(product.name)}</h1>\n'
        '<p class="product-meta">Brand: <span itemprop="brand" itemscope itemtype="https://schema.org/Brand">'
        f'<span itemprop="name">{escape(product.brand)}</span></span> · '
        f'SKU: <span itemprop="sku">{product.sku}</span></p>\n'
        '<div class="price-box" itemprop="offers" itemscope itemtype="https://schema.org/Offer">'
        f'{was}<span class="price"><meta itemprop="priceCurrency" content="{product.currency}">{symbol}'
        f'<span itemprop="price" content="{product.price:.2f}">{amount}</span></span>\n'
        f'<link itemprop="availability" href="{product.availability_url}">'
        f'<p class="stock">{stock_phrase(product)}</p></div>\n'
        f'<p class="rating">Rated {product.rating} out of 5 ({product.review_count} reviews)</p>\n'
        f"{_basket_button(product)}\n"
        "</div>"
    )


def _structured_data(page: Page, product: Product) -> str:
    data: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": product.name,
        "sku": product.sku,
        "description": product.description,
        "image": [page.absolute(product.image_path)],
        "brand": {"@type": "Brand", "name": product.brand},
        "aggregateRating": {
            "@type": "AggregateRating",
            "ratingValue": str(product.rating),
            "reviewCount": product.review_count,
        },
        "offers": {
            "@type": "Offer",
            "url": page.url,
            "price": f"{product.price:.2f}",
            "priceCurrency": product.currency,
            "availability": product.availability_url,
            "itemCondition": "https://schema.org/NewCondition",
        },
    }
    crumbs = {
        "@context": "https://schema.org",
        "@type": "BreadcrumbList",
        "itemListElement": [
            {"@type": "ListItem", "position": 1, "name": "Home", "item": page.absolute("/")},
            {"@type": "ListItem", "position": 2, "name": product.category},
            {"@type": "ListItem", "position": 3, "name": product.name},
        ],
    }
    return json_ld(data) + "\n" + json_ld(crumbs)


def _specs(page: Page, product: Product) -> str:
    rows = [("Category", product.category), ("Brand", product.brand), ("Model", product.sku)]
    table = "".join(f"<tr><th>{name}</th><td>{escape(value)}</td></tr>" for name, value in rows)
    extra = ""
    if product.index % 10 == 3:  # a broken link: the spec sheet was never uploaded
        extra = f"<p>{page.a(f'/downloads/{product.sku.lower()}.pdf', 'Download the spec sheet (PDF)')}</p>"
    return f'<section class="specs"><h2>Specifications</h2><table>{table}</table>{extra}</section>'


def _related(page: Page, product: Product) -> str:
    count = page.catalog.product_count(page.host)
    indexes = dict.fromkeys((product.index + step) % count for step in (1, 3, 7, 13))
    indexes.pop(product.index, None)
    cards = []
    for position, index in enumerate(indexes):
        other = page.catalog.teaser(page.host, index)
        # Some old links still point at the pre-migration URLs, which redirect.
        path = f"/old{other.path}" if position == 0 and product.index % 9 == 4 else other.path
        price = format_price(other.price, other.currency, other.comma_decimals)
        offer = "" if is_js_host(page) else f' <span class="card-price">{price}</span>'
        cards.append(f"<li>{page.a(path, other.name)}{offer}</li>")
    partner = page.catalog.partner_article(page.host, product.index)
    review = ""
    if partner is not None:
        target = page.spec.origin(partner.host) + partner.path
        press = escape(site_name(page.spec, partner.host))
        review = f"<p>In the press: {page.a(target, partner.headline)} ({press})</p>"
    return f'<section class="related"><h2>You may also like</h2><ul>{"".join(cards)}</ul>{review}</section>'


def product_json(catalog: Catalog, host: int, path: str) -> bytes | None:
    """``/api/products/<slug>.json``: what a script-drawn shop's page fills in (js_shop.py)."""
    slug = path[len(API_PREFIX) :].removesuffix(".json")
    product = catalog.product_by_slug(host, slug) if path.endswith(".json") else None
    if product is None:
        return None
    price = format_price(product.price, product.currency, product.comma_decimals)
    was = ""
    if product.was_price is not None:
        old_price = format_price(product.was_price, product.currency, product.comma_decimals)
        was = f'<del class="price-old">{old_price}</del> '
    item = {
        "price": f"{product.price:.2f}",
        "currency": product.currency,
        "price_html": f'{was}<span class="price">{price}</span>',
        "stock_text": stock_phrase(product),
        "stock_class": "out-of-stock" if product.availability == "OutOfStock" else "in-stock",
        "buyable": product.availability != "OutOfStock",
    }
    return json.dumps(item, ensure_ascii=False).encode()
