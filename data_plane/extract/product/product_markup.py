"""A product read from plain markup, for pages whose structured data is missing or incomplete.

The price and the area it sits in come from :mod:`data_plane.extract.product.product_area`. Within that
area, SKU, GTIN, brand and availability come from ``itemprop`` attributes, telling class names, then
labels and phrases ("SKU:", "EAN:", "Brand:", "In stock", "Only 3 left").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from selectolax.lexbor import LexborNode

from dualplane.data_plane.extract.fields import ProductFields
from dualplane.data_plane.extract.markup import Markup, ancestors, innermost, line, unique, words
from dualplane.data_plane.extract.product.availability import Availability, availability_in, availability_of
from dualplane.data_plane.extract.product.availability_decision import (
    IN_STOCK_LIKE,
    ButtonState,
    StockSignals,
    decide,
)
from dualplane.data_plane.extract.product.cart_forms import cart_form_submits
from dualplane.data_plane.extract.product.identifiers import gtin_of, sku_of
from dualplane.data_plane.extract.product.prices import currency_code, find_currency
from dualplane.data_plane.extract.product.product_area import (
    area_and_price,
    elsewhere,
    own_text,
    unseen_within,
)
from dualplane.data_plane.extract.product.product_labels import (
    clean,
    labelled_brand,
    labelled_gtin,
    labelled_sku,
    labelled_skus,
    lines_of,
)
from dualplane.data_plane.extract.structured.schema_org import absolute_urls

STOCK_WORDS = frozenset({"stock", "availability", "inventory", "instock", "outofstock", "stockstatus"})
_STOCK_CANDIDATES = ", ".join(
    f'[{attribute}*="{hint}" i]' for attribute in ("class", "id") for hint in ("stock", "avail", "inventory")
)
"""Every class or id that makes one of STOCK_WORDS holds one of these: the CSS engine picks the few nodes,
only they are judged in Python (every node with a class or id was, 1-3 ms of CPU on a large page)."""
# Add-to-cart controls, in the languages of the markets shops sell in ("Buy" alone only as a control's
# whole text: as a word it is everywhere; Japanese "…を購入する", "buy …", only as a label's end).
_BUY = re.compile(
    r"add[\s_-]*to[\s_-]*(?:cart|basket|bag|trolley)|buy[\s_-]*now|^\s*buy\s*$"
    r"|in den (?:warenkorb|einkaufswagen)|ajouter au panier|a[ñn]adir (?:al carrito|a la cesta)"
    r"|aggiungi al carrello|in (?:de )?winkelwagen|do ko[šs][íi]ku|do ko[šs][íi]ka|kos[áa]rba|do koszyka"
    r"|l[äa]gg i (?:varukorgen|kundvagnen)|legg i handlekurven|l[æa]g i kurv|lis[äa][äa] ostoskoriin"
    r"|adicionar ao carrinho|sepete ekle|в корзину|カートに入れる|加入购物车|購入する\s*$|今すぐ購入",
    re.I,
)
_BUY_HINTS = re.compile(
    "cart|basket|bag|trolley|buy|warenkorb|einkaufswagen|panier|carrito|cesta|carrello|winkelwagen"
    "|kosik|kosarba|koszyka|varukorgen|kundvagnen|kurv|ostoskoriin|carrinho|sepete"
)
"""A word of each of ``_BUY``'s alternatives as written in ASCII (lower-cased): an ASCII label without any
says no add-to-cart. Keep in step with ``_BUY`` (the tests check one label of each alternative)."""
_CART_LINK = re.compile(r"/cart/add\b|[?&]add-to-cart=\d", re.I)
"""A link that adds to the cart whatever its label says (groupon.com's "Buy" with a loader inside):
Shopify's and Magento's ``/cart/add`` (``/checkout/cart/add``), WooCommerce's ``?add-to-cart=ID``."""
PRODUCT_ATTRIBUTES = ("class", "id", "name", "value", "title", "aria-label", "onclick")
"""Attributes that name a control's action: Magento's ``onclick="productAddToCartForm.submit(this)"``
on a button labelled only in the shop's language ("Do koszyka"), a ``title="Add to Cart"`` on a link
drawn as a picture by CSS (focalprice.com)."""
DISABLED_WORDS = frozenset({"disabled", "isdisabled", "btndisabled", "soldout", "outofstock", "unavailable"})
"""Class words of an add-to-cart control that does not take orders."""
BUY_CONTROLS = "button, input[type=submit i], input[type=button i], a, [class*=cart i], [id*=cart i]"
CONTROL_TAGS = frozenset({"button", "input", "a", "img"})
LISTED_BUY_CONTROLS = 4
"""This many different add-to-cart controls (each its own item id) are a listing's, one per card: a
product's buy box has one, with a sticky copy or a "buy now" beside it at most."""
DRAWN_TAGS = frozenset({"div", "span"})
"""A script's control: where no button, input or link adds to the cart, a ``div`` or ``span`` whose whole
text is the label ("Add to Cart" on allposters.com, "Add To Bag" on adidas.com) is the control."""
MAX_LABEL_WORDS = 4
BUY_IMAGES = "input[type=image], a img, button img"
"""Controls drawn as an image (osCommerce's ``button_in_cart``, PayPal's "Buy Now", "AddToCart.png"): their
alt text, title or file name says what they do."""
SKU_DATA = ("data-sku", "data-product-sku", "data-item-sku", "data-variant-sku")
SKU_ATTRIBUTES = "[itemprop=sku], " + ", ".join(f"[{name}]" for name in SKU_DATA)
SKU_WORDS = frozenset({"sku", "itemcode", "productcode", "itemnumber", "productnumber", "articlenumber"})
SKU_CLASSED = ", ".join(
    f"[{attribute}*={hint} i]" for attribute in ("class", "id") for hint in ("sku", "code", "number")
)
"""The CSS engine picks the few candidates; their class or id words are then judged in Python."""
REPEATED_CODES = 2
"""Like blocks side by side, each with an item number of its own, are a list of products."""
MAX_STATEMENT_WORDS = 12
MAX_DETAILS_CHARS = 200_000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")  # a full stop before a capital: a new sentence
_MEDIA = re.compile(r"\b(?:image|imagen|immagine|bild|foto|photo|video|vídeo)\b", re.I)


@dataclass(frozen=True)
class MarkupProduct:
    """What markup says about a product, and whether the page looks like a product page at all.

    ``signals`` are what the markup says about the product's stock (an ``itemprop``, a visible element
    about stock, the add-to-cart control, a short stock line); ``fields.availability`` is what they settle
    on their own (:func:`~data_plane.extract.product.availability_decision.decide`).
    """

    fields: ProductFields
    buy_button: bool
    signals: StockSignals = field(default_factory=StockSignals)
    labelled_sku: str | None = None
    """An item number printed after its label ("SKU: …", "Art.-Nr. …"), the visible one."""
    ordered: bool = False
    """No price is printed, but a form posts this product to the cart: a product page without a price."""


def markup_product(page: Markup, base_url: str, *, declared: bool = False) -> MarkupProduct:
    """The product the page's markup shows; empty fields where it shows nothing recognisable.

    Unless the page ``declared`` a product in structured data, a page without a price (and without a form
    that posts one product to the cart, :mod:`~data_plane.extract.product.cart_forms`), or with a price
    but neither an item number nor an add-to-cart control nor a stock statement, is not read any further
    (its fields stay empty): most pages are not product pages, and this keeps them cheap. Stock statements, an
    add-to-cart control and an item number are looked for in the product's area first, then in the
    rest of the main content (a buy box or a details table often sits beside or below the area).
    """
    main = page.main(headed=True)
    scope, price = area_and_price(main)
    # A form that posts one product to the cart is an order control on a page of one product, even where
    # the page prints no price (drawn by a script or by CSS sprites): its stock is still read.
    if price is None and not declared and not cart_form_submits(main):
        return MarkupProduct(ProductFields(), buy_button=False)
    area_text = clean(own_text(scope, None))
    currency = price.currency if price else None
    if price is not None and currency is None:
        currency = _itemprop(scope, "priceCurrency") or currency_code(
            page.meta("product:price:currency") or ""
        )
        currency = currency or find_currency(area_text)
    wider = None if scope.mem_id == main.mem_id else main
    shown_skus = list(labelled_skus(area_text))  # one scan of the area's text for both uses below
    labelled = _one(iter(shown_skus))
    sku = _sku_attribute(scope) or labelled or next(iter(shown_skus), None)
    if sku is None:  # a details table below the area, or past the scanned text: read the main text at C speed
        text = (wider if wider is not None else scope).text(separator="")[:MAX_DETAILS_CHARS]
        sku = labelled = labelled_sku(lines_of(clean(text)))
    sells, button, on_button = _buy_control(scope)
    if button is None and wider is not None:
        sells_beside, button, on_button = _buy_control(wider)
        sells = sells or sells_beside
    in_area = _stock_statement(scope, scope)
    beside = _stock_statement(wider, scope) if wider is not None and in_area is None else None
    if not declared and sku is None and not sells and not (in_area or on_button or beside):
        # A price alone makes no product page (see product.extract_product): the rest would be dropped.
        return MarkupProduct(ProductFields(), buy_button=False)
    signals = StockSignals(
        published=_itemprop_availability(scope),
        statement=in_area or on_button or beside,
        button=button,
        phrase=_availability_in(clean(own_text(scope, None, shown=True)), button),
    )
    fields = ProductFields(
        name=_name(page, scope),
        price=price.amount if price else None,
        currency=currency,
        availability=decide(signals),
        sku=sku,
        gtin=_gtin(scope, area_text),
        brand=_brand(scope, area_text),
        images=tuple(_images(page, scope, base_url)),
    ).from_source("markup", seen=("availability",) if signals != StockSignals() else ())
    return MarkupProduct(fields, sells, signals=signals, labelled_sku=labelled, ordered=price is None)


def _one(values: Iterator[str]) -> str | None:
    """The only distinct value, or ``None`` for none or several (variants listed with their SKUs)."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _name(page: Markup, scope: LexborNode) -> str | None:
    heading = scope.css_first("h1") or page.main(headed=True).css_first("h1")
    name = line(heading) if heading is not None else ""
    return name or page.meta("og:title") or None


def _itemprop_availability(scope: LexborNode) -> Availability | None:
    for node in scope.css("[itemprop=availability]"):
        value = node.attributes.get("href") or node.attributes.get("content") or line(node)
        if value:
            return availability_of(value)
    return None


def _stock_statement(container: LexborNode, area: LexborNode) -> Availability | None:
    """What the first shown element about stock in ``container`` (outside other products' boxes) states.

    Innermost elements first; then the short ones around them, since a statement often wraps its number
    in a stock-classed element of its own (``<div class="stock-count">Only <span class="stock-qty">2</span>
    left</div>``: the span alone says nothing). Hidden elements and a variant picker's options say nothing
    about the product (:func:`~data_plane.extract.product.product_area.unseen`).
    """
    stock = [
        node
        for node in unique(container.css(_STOCK_CANDIDATES))
        if STOCK_WORDS & words(node)
        and (container.mem_id == area.mem_id or not elsewhere(node, container))
        and not unseen_within(node)
    ]
    inner = innermost(stock)
    inner_ids = {node.mem_id for node in inner}
    outer = (node for node in stock if node.mem_id not in inner_ids)
    for node in (*inner, *outer):
        text = clean(line(node))
        if node.mem_id not in inner_ids and len(text.split()) > MAX_STATEMENT_WORDS:
            continue
        found = availability_in(text, loose=True)
        if found is not None:
            return found
    return None


def _availability_in(area_text: str, button: ButtonState | None = None) -> Availability | None:
    """The first stock phrase in the area's short lines or sentences: a stock statement is a few words,
    while prose ("we will pre-order your items when…") and captions ("Image unavailable") only mention
    stock words. A paragraph's short sentence counts ("This product is out of stock online. To see if…").

    Beside an enabled add-to-cart control, an in-stock phrase wins over an earlier sold-out one: the
    control and the line agree, and the other is a variant's or a script's message whose stylesheet hides
    it (Amazon's "Sorry, this item is not available in" template above its buy box's "In Stock.").
    """
    phrases = _phrases(area_text)
    first = next(phrases, None)
    if button == "enabled" and first not in (None, *IN_STOCK_LIKE):
        return next((found for found in phrases if found in IN_STOCK_LIKE), first)
    return first


def _phrases(area_text: str) -> Iterator[Availability]:
    for text_line in area_text.splitlines():
        for sentence in _SENTENCE_END.split(text_line):
            if len(sentence.split()) > MAX_STATEMENT_WORDS or _MEDIA.search(sentence):
                continue
            found = availability_in(sentence)
            if found is not None:
                yield found


def _sku_attribute(scope: LexborNode) -> str | None:
    """An item number the markup marks as one: ``itemprop=sku``, ``data-sku`` (``data-product-sku``…), an
    element whose class or id says "sku" or "item code" (``<div id="itemcode">#84682</div>``)."""
    for node in scope.css(SKU_ATTRIBUTES):
        attributes = node.attributes
        value = attributes.get("content") or next(
            (attributes[name] for name in SKU_DATA if attributes.get(name)), None
        )
        sku = sku_of(value or line(node))
        if sku:  # a hidden one too: shops keep the item number in hidden elements for their scripts
            return sku
    marked = [node for node in scope.css(SKU_CLASSED) if SKU_WORDS & words(node)]
    marked_ids = {node.mem_id for node in marked}
    own = (node for node in marked if not _others_code(node, scope, marked_ids))
    for node in innermost(own):
        sku = sku_of(line(node))
        # "sku" says so; "code" or "number" may head a promotion code or a phone number: a digit at least
        if sku and ("sku" in words(node) or any(char.isdigit() for char in sku)):
            return sku
    return None


def _others_code(node: LexborNode, scope: LexborNode, marked: set[int]) -> bool:
    """Whether a class-marked item number is another product's: in a container about other products
    (related, recently viewed: :func:`~data_plane.extract.product.product_area.elsewhere`), or in one of
    several like blocks (same tag and class) that each hold one, the cards of a list or a carousel
    (shop.lego.com's ``<li class="product-thumbnail"><span class="item-code">75020</span>`` beside the
    product's own "Item: 10188"). A number that is not the product's is not its SKU."""
    if elsewhere(node, scope):
        return True
    for block in ancestors(node):
        parent = block.parent
        if block.mem_id == scope.mem_id or parent is None:
            return False
        kind = (block.tag, block.attributes.get("class"))
        alike = [child for child in parent.iter() if (child.tag, child.attributes.get("class")) == kind]
        coded = [child for child in alike if any(n.mem_id in marked for n in child.css(SKU_CLASSED))]
        if len(coded) >= REPEATED_CODES:
            return True
    return False


def _gtin(scope: LexborNode, area_text: str) -> str | None:
    for node in scope.css("[itemprop^=gtin], [itemprop=isbn]"):
        gtin = gtin_of(node.attributes.get("content") or line(node))
        if gtin:
            return gtin
    return labelled_gtin(area_text)


def _brand(scope: LexborNode, area_text: str) -> str | None:
    node = scope.css_first("[itemprop=brand]")
    if node is not None:
        name = node.css_first("[itemprop=name]")
        value = (name.attributes.get("content") or line(name)) if name else None
        value = value or node.attributes.get("content") or line(node)
        if value:
            return value
    return labelled_brand(area_text)


def _images(page: Markup, scope: LexborNode, base_url: str) -> list[str]:
    og_images = list(absolute_urls([page.meta("og:image")] if page.meta("og:image") else [], base_url))
    if og_images:
        return og_images
    image = scope.css_first("[itemprop=image]") or scope.css_first("img[src]")
    source = image.attributes.get("src") or image.attributes.get("content") if image else None
    return list(absolute_urls(source, base_url))


def _itemprop(scope: LexborNode, name: str) -> str | None:
    node = scope.css_first(f"[itemprop={name}]")
    return currency_code(node.attributes.get("content") or line(node)) if node else None


def _buy_control(scope: LexborNode) -> tuple[bool, ButtonState | None, Availability | None]:
    """Whether this product has an add-to-cart control (not a related item's, not a hidden one), its
    state, and the stock its label states ("Sold out" on a disabled Shopify button whose id says
    "AddToCart").

    A form's submit control counts when the form posts this product to the cart
    (:mod:`~data_plane.extract.product.cart_forms`), whatever its label. ``enabled`` when one shown control
    takes orders; ``disabled`` when every one is disabled (the
    ``disabled`` attribute, ``aria-disabled``, a class saying so) or labelled with an out-of-stock phrase.
    A form or a box whose class or id says "add to cart" shows the page sells the product, but only a
    control (a button, an input, a link) has a state: the box may hold a disabled one, or only a label.
    """
    controls = [node for node in scope.css(BUY_CONTROLS) if _buy_label(node)]
    controls += [node for node in scope.css(BUY_IMAGES) if _buy_image(node)]
    controls += cart_form_submits(scope)  # labelled in any words: the form says it orders this product
    shown = [node for node in controls if not elsewhere(node, scope) and not unseen_within(node)]
    pressed = [node for node in shown if node.tag in CONTROL_TAGS] or [
        node for node in shown if node.tag in DRAWN_TAGS and _labelled_only(node)
    ]
    if len({tuple(sorted(node.attributes.items())) for node in pressed}) >= LISTED_BUY_CONTROLS:
        return False, None, None  # one per card: a listing's, not one product's buy box
    found: ButtonState | None = None
    stated: Availability | None = None
    for node in pressed:
        label = availability_in(line(node))
        stated = stated or label
        if label == "out_of_stock" or _disabled(node):
            found = found or "disabled"
        else:
            return True, "enabled", stated
    return bool(shown), found, stated


def _labelled_only(node: LexborNode) -> bool:
    """Whether ``node``'s whole text is an add-to-cart label: a box around one holds more words."""
    label = line(node)
    return len(label.split()) <= MAX_LABEL_WORDS and says_buy(label)


def _buy_label(node: LexborNode) -> bool:
    attributes = node.attributes  # a new dict at each call: read it once
    if node.tag == "a" and _CART_LINK.search(attributes.get("href") or ""):
        return True
    named = [value for name in PRODUCT_ATTRIBUTES if (value := attributes.get(name))]
    # Most links say nothing of buying: one look at all their labels at once passes them over (a hint,
    # free of spaces, is in the raw text when it is in the text on one line).
    if not _may_say_buy("\n".join((node.text(separator=" "), *named))):
        return False
    return any(says_buy(label) for label in (line(node), *named) if label)


def says_buy(label: str) -> bool:
    """Whether ``label`` names the add-to-cart action (``_BUY``).

    Every link of a page is asked, with up to eight labels each: the many-language ``_BUY``, folding case,
    cost ~2.5 ms of CPU per large page. Most labels are ASCII and hold none of ``_BUY_HINTS``, which a
    plain search of the lower-cased label tells three times faster; in ASCII text no letter of ``_BUY``'s
    other scripts can match, so the answer is the same.
    """
    return _may_say_buy(label) and _BUY.search(label) is not None


def _may_say_buy(text: str) -> bool:
    """False when no part of ``text`` can match ``_BUY``: ASCII text holding none of ``_BUY_HINTS``."""
    return not text.isascii() or _BUY_HINTS.search(text.lower()) is not None


def _disabled(node: LexborNode) -> bool:
    attributes = node.attributes
    if "disabled" in attributes or (attributes.get("aria-disabled") or "").strip().lower() == "true":
        return True
    return bool(DISABLED_WORDS & words(node))


def _buy_image(node: LexborNode) -> bool:
    """An image that reads as an add-to-cart control: in its alt text, title or file name."""
    attributes = node.attributes
    file_name = (attributes.get("src") or "").rsplit("/", 1)[-1]
    labels = (attributes.get("alt"), attributes.get("title"), file_name)
    return any(says_buy(label) for label in labels if label)
