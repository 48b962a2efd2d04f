"""Shop hosts that draw price and stock with a script, as many real shops do (``SiteSpec.js_hosts``).

On such a host a product page carries an empty price box and stock line, and ``/static/shop.js``
fills them from ``/api/products/<slug>.json`` once the page has loaded. Nothing on the page says
the price without running the script: no JSON-LD, no microdata, no prices on product cards. Once
rendered, the page's DOM is the plain markup of any other host's product page, so the extractor
meets the same price box and stock line. A crawler that does not run scripts sees neither.
"""

from __future__ import annotations

from html import escape

from dualplane.sample_site.content import Product
from dualplane.sample_site.layout import Page

SCRIPT_PATH = "/static/shop.js"
API_PREFIX = "/api/products/"
# Fills the page's price box, stock line and basket button from the product's JSON.
SHOP_JS = """\
(function () {
  var box = document.querySelector(".price-box[data-product]");
  if (!box) { return; }
  fetch("/api/products/" + box.dataset.product + ".json")
    .then(function (answer) { return answer.json(); })
    .then(function (item) {
      box.innerHTML = item.price_html;
      var stock = document.querySelector("p.stock");
      stock.textContent = item.stock_text;
      stock.className = "stock " + item.stock_class;
      document.querySelector("button.add-to-cart").disabled = !item.buyable;
      document.body.dataset.priced = "1";
    });
})();
"""


def is_js_host(page: Page) -> bool:
    return page.host in page.spec.js_hosts


def js_detail(page: Page, product: Product, image: str) -> str:
    """The product's detail box with price and stock left to the script."""
    return (
        '<div class="product-detail">\n'
        f'{image}\n<h1 class="product-title">{escape(product.name)}</h1>\n'
        f'<p class="product-meta">Brand: <strong>{escape(product.brand)}</strong> · '
        f'SKU: <span class="sku">{product.sku}</span></p>\n'
        f'<div class="price-box" data-product="{escape(product.slug)}"></div>\n'
        '<p class="stock"></p>\n'
        f'<p class="rating">Rated {product.rating} out of 5 ({product.review_count} reviews)</p>\n'
        '<button type="button" class="add-to-cart" disabled>Add to basket</button>\n'
        f'<script src="{SCRIPT_PATH}" defer></script>\n'
        "</div>"
    )
