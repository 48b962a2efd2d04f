"""Where a product page shows its product: the area around the ``<h1>``, and the price in it.

The *product area* is the smallest ancestor of the page's ``<h1>`` (up to ``AREA_LEVELS`` up) that
holds a price element: ``itemprop=price``, ``data-price`` attributes, or an element whose class or id
says "price" (innermost first). Failing that, the first amount written next to a currency in the
area's text, from the product name on. Struck-through prices are gone already (see
:class:`~data_plane.extract.markup.Markup`); containers about other products (related items,
cards, carousels, navigation) are never read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from decimal import Decimal

from selectolax.lexbor import LexborNode

from dualplane.data_plane.extract.markup import ancestors, innermost, line, words
from dualplane.data_plane.extract.product.availability import availability_in
from dualplane.data_plane.extract.product.decimal_marks import page_mark
from dualplane.data_plane.extract.product.other_amounts import without_other_amounts
from dualplane.data_plane.extract.product.prices import (
    DecimalMark,
    Price,
    amount_of,
    find_currency,
    names_currency,
    parse_price,
)

AREA_LEVELS = 6
SCAN_CHARS = 20_000
"""Label and phrase heuristics read this much of the product area's text: product facts come first."""
ELSEWHERE_WORDS = frozenset(
    {"related", "recommended", "recommendations", "similar", "carousel", "upsell", "crosssell", "card",
     "tile", "teaser", "listing", "productgrid", "productlist", "minicart", "minibasket", "cartdrawer",
     "wishlist", "recently", "viewed", "bundle", "accessories", "reviews", "comments", "products"}
)  # fmt: skip
_ELSEWHERE_HINT = re.compile("|".join(sorted(ELSEWHERE_WORDS)))
PAGE_FRAME_TAGS = frozenset({"nav", "footer"})
OTHERS_HEADINGS = frozenset({"h2", "h3", "h4", "h5"})
HEADED_BLOCK_TAGS = frozenset({"div", "section", "aside", "article", "ul", "ol", "li", "td", "form"})
"""The blocks a heading may open: a heading's own ``<span>`` or a link holds no block of products."""
_OTHERS_TITLE = re.compile(
    r"\W*(?:use it with|frequently bought together|customers (?:who|also)\b|you (?:may|might) also\b|"
    r"related (?:products|items)|similar (?:products|items)|complete the look|pairs well with|"
    r"(?:people|others) also\b|recently viewed|recommended for you|kunden kauften auch|"
    r"das könnte (?:ihnen|dir) auch gefallen|ähnliche (?:produkte|artikel)|passend dazu|vous aimerez aussi|"
    r"produits similaires|ti potrebbe interessare|prodotti correlati|te puede interesar|"
    r"productos relacionados)",
    re.I,
)
"""A heading over other products' blocks, in the languages the price labels cover."""
PICKER_TAGS = frozenset({"select", "option", "optgroup", "datalist"})
HIDING_CLASSES = frozenset(
    {"hidden", "hide", "d-none", "is-hidden", "u-hidden", "no-display", "display-none", "invisible"}
    | {"ng-hide"}
)
"""Class tokens that hide an element in the common CSS frameworks and shop themes (Bootstrap, Magento,
AngularJS's ``ng-hide``, which its ``ng-show`` sets on every message the model does not show: staples.com
kept "OUT OF STOCK ONLINE" and "Available on: January 1, 1900" so, beside an in-stock product)."""
_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.I)
"""Never the product's, even around an ``<h1>`` (a logo); an ``<aside>`` is, when it holds the ``<h1>``."""
CARD_SIBLINGS = 3
"""This many like blocks side by side, each with a price, are cards of a listing or a product grid."""
CARD_CHARS = 2000
CURRENCY_LINE_CHARS = 12
DATA_PRICE_ATTRIBUTES = ("data-price", "data-price-amount", "data-product-price")
MARKED_PRICES = "[itemprop=price], " + ", ".join(f"[{name}]" for name in DATA_PRICE_ATTRIBUTES)
CLASSED_PRICES = "[class*=price i], [id*=price i]"
NOT_A_PRICE_WORDS = frozenset(
    {"unit", "per", "perunit", "save", "saving", "savings", "discount", "badge", "shipping", "delivery",
     "tax", "vat", "installment", "instalment", "monthly", "filter", "range", "slider"}
)  # fmt: skip


STRUCK_TAGS = frozenset({"del", "s", "strike"})
FORMER_PRICE_WORDS = frozenset(
    {"strike", "strikethrough", "linethrough", "old", "oldprice", "was", "wasprice"}
)
STRUCK_LEVELS = 2
"""How far up a price element a struck or former-price block is looked for."""


# A price element whose text opens with one of these labels shows a former price or a saving, not the
# price to pay ("Retail Price: $125.00", "You save: $11.05", "UVP 129,00 €", "Prix conseillé 40 €").
_NOT_THE_PRICE = re.compile(
    r"^\W*(?:retail|list|regular|original|suggested|was|reg\b|rrp|msrp|uvp|statt|compare|"
    r"you save|save|savings?|your savings|sie sparen|ersparnis|prix conseill[ée]|ancien prix|"
    r"prezzo di listino|precio (?:anterior|de lista)|adviesprijs|van\b)",
    re.I,
)
# A price element whose text opens with one of these labels shows the price to pay now, beside a former
# one that nothing marks as former (gap.com's ``product-price--markdown`` "$64.95", then "Now $52.00"),
# the amount right after the label.
_TO_PAY = re.compile(
    r"^\W*(?:now|sale(?: price)?|our price|special price|offer price|jetzt|maintenant|ahora)\b"
    r"[\s:]*(?:[^\w\s]{1,3}\s?|[A-Z]{3}\s?)?\d",  # the amount right after: "Sale (Save $120)" is a saving
    re.I,
)
TO_PAY_LOOKAHEAD = 3
"""How many price elements after the first a labelled price to pay is looked for among."""
_UNIT_AFTER = re.compile(
    r"\s*(?:per|pro|je|par|por|за)\s+\w|\s*/\s*(?:\d+\s*)?(?:kg|g|l|ml|cl|m|m2|m²|lb|oz|ft|unit|pc|stk|st)\b",
    re.I,
)
_FLOOR_BEFORE = re.compile(r"\b(?:as low as|ab nur|à partir de seulement)\s*$", re.I)
_WHOLE_THEN_CENTS = re.compile(r"(?<![\d.,])(\d{1,3}(?:[.,\s]\d{3})*|\d+) (\d{2})(?![\d.,])")
CENTS_WORDS = frozenset({"fraction", "cents", "cent", "decimal", "decimals", "pennies", "superscript", "sup"})
_DIGIT = re.compile(r"\d")  # the same digits as the amounts of data_plane.extract.product.prices
# A price split into parts reads "69. 99" once its parts are joined by spaces: the cents belong to it;
# "7 .99" too, the mark written with the cents (lampsplus.com: ``7<span class="currencyCents">.99</span>``).
_SPLIT_CENTS = re.compile(r"(\d[.,])\s+(\d{2})(?!\d)|(\d)\s+([.,]\d{2})(?![\d.,])")
# An amount with a minus before it and no digit earlier on its line is a saving or a discount ("Outlet
# Savings: -$80.00", "-20%"), never the price to pay; a range ("$10 - $20") has digits before its dash.
_THOUSANDFOLD = frozenset({Decimal(1000), Decimal("0.001")})
_NEGATIVE = re.compile(r"^[^\d]*?(?:^|[\s:(])[-\u2212]\s?(?:[^\w\s]{1,3}|[A-Z]{3})?\s?\d")


def area_and_price(main: LexborNode) -> tuple[LexborNode, Price | None]:
    """The product area within ``main`` (``main`` itself without an ``<h1>``) and the price shown there."""
    heading = next((h1 for h1 in main.css("h1") if not elsewhere(h1, main)), None)
    area = None
    found = _PriceNodes(main, heading)
    # "1.299" read by the page's own prices, asked only where a price is written so (decimal_marks).
    mark = page_mark(lambda: main.text(separator=" "))
    if heading is not None:
        for level, area in enumerate(ancestors(heading)):
            price = _price_element(area, *found.within(level), mark)
            if price is not None:
                return area, price
            if level >= AREA_LEVELS or area.mem_id == main.mem_id:
                break
    cards: set[int] = set()
    price = _price_element(main, found.marked, found.classed, mark, cards)
    if price is not None:
        return main, price
    scope = area or main
    # No currency written anywhere in the scope: none in its own text either, and only an amount with one
    # is taken below. Most pages are no product page; this spares them the walk and a price parse per line
    # with a digit (2-7 ms of a 10-20 ms documentation page). Own text is the scope's text nodes in order,
    # some left out, so it could spell a code only split across a left-out element ("EU<nav>…</nav>R").
    if not names_currency(scope.text(separator="")):
        return scope, None
    # No price element outside cards: read the text, but not the cards' (a listing's first card is no price
    # of the page's own; a product beside a grid of others still shows its price outside the grid).
    return scope, _currency_amount(own_text(scope, heading, skip=frozenset(cards)), mark)


def own_text(
    scope: LexborNode, heading: LexborNode | None, skip: frozenset[int] = frozenset(), *, shown: bool = False
) -> str:
    """The scope's text from the product name on, without containers about other products (nor ``skip``).

    Amounts above the name (the basket, a banner) or in related items are not the product's price. With
    ``shown``, hidden elements and a variant picker's options are left out too (see :func:`unseen`).
    """
    left_out = _LeftOut(skip, shown=shown)
    # The heading and the elements that hold it: before the heading, only they are entered (the text
    # before it is not read), and one left out still starts the reading where the heading ends.
    holders = {node.mem_id for node in _self_and_ancestors(heading)} if heading is not None else set()
    parts: list[str] = []
    size, started = 0, heading is None or heading.mem_id == scope.mem_id
    # Depth first, children by children, so that a container left out is skipped whole, never entered:
    # judging each text node by its parents (a new node object each) cost twice the walk.
    pending = [scope.iter(include_text=True)]
    while pending and size < SCAN_CHARS:
        node = next(pending[-1], None)
        if node is None:
            pending.pop()
            continue
        tag = node.tag
        if tag == "-text":
            if started:
                parts.append(node.text_content or "")
                size += len(parts[-1])
            continue
        if tag == "-comment" or (not started and node.mem_id not in holders):
            continue
        if not started and heading is not None and node.mem_id == heading.mem_id:
            started = True
        if left_out(node):
            started = started or node.mem_id in holders
            continue
        pending.append(node.iter(include_text=True))
    return "\n".join(" ".join(part.split()) for part in "".join(parts).splitlines())


def _self_and_ancestors(node: LexborNode) -> Iterator[LexborNode]:
    found: LexborNode | None = node
    while found is not None:
        yield found
        found = found.parent


class _LeftOut:
    """Whether an element's text is left out of :func:`own_text`: a container about other products (or
    one of ``skip``), or, with ``shown``, one :func:`unseen`."""

    def __init__(self, skip: frozenset[int], *, shown: bool = False) -> None:
        self.skip = skip
        self.shown = shown

    def __call__(self, container: LexborNode) -> bool:
        return container.mem_id in self.skip or about_others(container) or (self.shown and unseen(container))


class _PriceNodes:
    """The price elements of ``main`` (:data:`MARKED_PRICES`, :data:`CLASSED_PRICES`), looked up once,
    and those of each area around ``heading``.

    Each area's own two queries walked its whole subtree again, level after level: 1.1 ms of a large
    page. The CSS engine lists matches in document order, the node it is asked on included (a node once
    for each selector it matches), so an area's query gives main's list without the nodes outside it.
    """

    def __init__(self, main: LexborNode, heading: LexborNode | None) -> None:
        self.marked = main.css(MARKED_PRICES)
        self.classed = main.css(CLASSED_PRICES)
        # Area levels as area_and_price counts them: the heading's parent is level 0 (its text too).
        chain = [heading, *ancestors(heading)] if heading is not None else []
        self._levels = {node.mem_id: max(level - 1, 0) for level, node in enumerate(chain)}
        self._joins: dict[int, float] = {}

    def within(self, level: int) -> tuple[list[LexborNode], list[LexborNode]]:
        """The marked and the classed price elements of the area ``level`` levels above the heading."""
        return (
            [node for node in self.marked if self._join(node) <= level],
            [node for node in self.classed if self._join(node) <= level],
        )

    def _join(self, node: LexborNode) -> float:
        """The lowest area level that holds ``node`` (infinite when none does)."""
        known = self._joins.get(node.mem_id)
        if known is None:
            walked: LexborNode | None = node
            while walked is not None and walked.mem_id not in self._levels:
                walked = walked.parent
            known = self._joins[node.mem_id] = self._levels[walked.mem_id] if walked else float("inf")
        return known


def _price_element(
    scope: LexborNode,
    marked: list[LexborNode],
    classed: list[LexborNode],
    mark: DecimalMark,
    cards: set[int] | None = None,
) -> Price | None:
    """The price a price element in ``scope`` shows, outside cards; the cards met go into ``cards``.

    ``marked`` and ``classed`` are the scope's elements matching :data:`MARKED_PRICES` and
    :data:`CLASSED_PRICES` (see :class:`_PriceNodes`); ``mark`` is the page's decimal mark.
    """

    judged: dict[int, bool] = {}  # block -> whether it is a card, for every price node of the scope

    def outside_cards(node: LexborNode) -> bool:
        card = card_of(node, scope, judged)
        if card is not None and cards is not None:
            cards.add(card.mem_id)
        return card is None

    for node in marked:
        raw = node.attributes.get("content") if node.attributes.get("itemprop") == "price" else None
        raw = raw or next(
            (node.attributes.get(name) for name in DATA_PRICE_ATTRIBUTES if name in node.attributes), None
        )
        # An element's text is display text ("1.299 €"); only an attribute value is schema.org's.
        amount = amount_of(raw) if raw else amount_of(line(node), structured=False, decimal_mark=mark)
        if amount is not None and amount > 0 and not elsewhere(node, scope) and outside_cards(node):
            shown = parse_price(line(node), decimal_mark=mark)
            return Price(_as_shown(amount, shown), shown.currency if shown else None)
    candidates = [node for node in classed if _is_price_node(node, scope)]
    priced = [(node, price) for node in candidates if (price := _positive(_with_parts(node, mark)))]
    # An amount next to its currency first: a price split into parts ("$", "8", ".", "99", each in its
    # own price-class element) must not be read from its innermost part alone ("99"). Cards are looked
    # for only on the way, node by node: a listing has hundreds of price elements.
    with_currency = {node.mem_id: price for node, price in priced if price.currency is not None}
    listed = innermost(node for node, _ in priced if node.mem_id in with_currency)
    for at, node in enumerate(listed):
        if outside_cards(node):
            after = listed[at + 1 : at + 1 + TO_PAY_LOOKAHEAD]
            return with_currency[_to_pay(node, after, outside_cards).mem_id]
    prices = {node.mem_id: price for node, price in priced}
    inner = innermost(node for node, _ in priced)
    return next((prices[node.mem_id] for node in inner if outside_cards(node)), None)


def _to_pay(
    first: LexborNode, after: list[LexborNode], outside_cards: Callable[[LexborNode], bool]
) -> LexborNode:
    """``first``, unless it is unlabelled and one of the next few price elements is labelled the price to
    pay now ("Now $52.00", "Sale price $9.99"): that one is what the buyer pays."""
    if _TO_PAY.match(line(first)):
        return first
    return next((node for node in after if _TO_PAY.match(line(node)) and outside_cards(node)), first)


def _as_shown(amount: Decimal, shown: Price | None) -> Decimal:
    """``amount``, unless the element shows the same digits read 1,000x apart: a shop that writes its
    display string into ``content`` ("1.299" beside "1.299 €"), where the page's reading is the buyer's."""
    if shown is not None and shown.amount > 0 and (shown.amount / amount) in _THOUSANDFOLD:
        return shown.amount
    return amount


def _shown_price(node: LexborNode, mark: DecimalMark) -> Price | None:
    """The price a price-classed element shows, unless its label says it is a former price or a saving,
    or the words around it make it a price per unit or a quantity tier's floor (:func:`_per_unit`)."""
    shown = line(node)
    if _NOT_THE_PRICE.match(shown) or _NEGATIVE.match(shown) or _per_unit(node, shown):
        return None
    shown = without_other_amounts(shown)  # "4 x 25,00 €", "$37/mo": an instalment, not the price
    if _WHOLE_THEN_CENTS.search(shown) and _cents_apart(node):
        shown = _WHOLE_THEN_CENTS.sub(r"\1.\2", shown)  # "$ 21 11": whole and cents in elements of their own
    return parse_price(_SPLIT_CENTS.sub(_joined, shown), decimal_mark=mark)


def _joined(match: re.Match[str]) -> str:
    """A split price's parts without the space between them (either alternative of ``_SPLIT_CENTS``)."""
    return "".join(part for part in match.groups() if part)


def _with_parts(node: LexborNode, mark: DecimalMark) -> Price | None:
    """:func:`_shown_price`, completed from the parent when ``node`` holds only the whole amount and its
    siblings the currency and the cents ("$", "21", "11" in three elements): "21.11" in dollars, not 21."""
    price = _shown_price(node, mark)
    parent = node.parent
    if price is None or price.currency is not None or parent is None or not _cents_apart(parent):
        return price
    whole = _shown_price(parent, mark)
    gave_cents = whole is not None and whole.amount != price.amount == int(whole.amount)
    return whole if gave_cents else price


def _cents_apart(node: LexborNode) -> bool:
    """True when ``node`` writes its cents in an element of their own, a ``<sup>`` or one classed as the
    fraction (``a-price-fraction``, ``price-cents``, ``decimals``), so that its text reads "21 11"."""
    return any(
        child.tag == "sup" or not CENTS_WORDS.isdisjoint(words(child))
        for child in node.traverse(include_text=False)
        if child.mem_id != node.mem_id
    )


def _per_unit(node: LexborNode, shown: str) -> bool:
    """True when the text around ``node`` says its amount is per unit ("$0.24 per bead", "3,99 €/kg") or
    the lowest of quantity tiers ("As low as $0.24"): the labelling rules' per-unit price, never the
    product's. Only the parent's line is read: the words sit beside the amount, in their own elements."""
    parent = node.parent
    if parent is None or not shown:
        return False
    around = line(parent)
    start = around.find(shown)
    if start < 0:
        return False
    return bool(_UNIT_AFTER.match(around[start + len(shown) :]) or _FLOOR_BEFORE.search(around[:start]))


def _positive(price: Price | None) -> Price | None:
    return price if price is not None and price.amount > 0 else None


def _is_price_node(node: LexborNode, scope: LexborNode) -> bool:
    found = words(node)
    return (
        not (NOT_A_PRICE_WORDS & found)
        and not _struck(node, scope)
        and bool(line(node))
        and not elsewhere(node, scope)
        and not links_away(node, scope)
    )


def _struck(node: LexborNode, scope: LexborNode) -> bool:
    """True when ``node`` shows a former price: struck through (``<del>``, ``<s>``, ``<strike>``) or
    classed so (``strike``, ``old-price``, ``was-price``), itself or a block around it within ``scope``
    (officedepot.com's ``<span class="price_column"><span class="strike">$299.99</span></span>`` above the
    price to pay), or whose amount is such an element's ("$299.99 each (Reg)" around it)."""
    for part in node.traverse(include_text=False):
        if part.mem_id != node.mem_id and _former(part):
            shown, struck = parse_price(line(node)), parse_price(line(part))
            return shown is not None and struck is not None and shown.amount == struck.amount
    for level, part in enumerate((node, *ancestors(node))):
        if part.mem_id == scope.mem_id or level > STRUCK_LEVELS:
            return False
        if _former(part):
            return True
    return False


def _former(node: LexborNode) -> bool:
    return node.tag in STRUCK_TAGS or not FORMER_PRICE_WORDS.isdisjoint(words(node))


def links_away(node: LexborNode, scope: LexborNode) -> bool:
    """True when ``node`` sits in a link to another page: a price shown as a link is another format's,
    size's or product's ("Kindle: $26.07" in a format picker, a related item), never the price of what
    is bought here, which a page shows beside its buy button and links nowhere."""
    for parent in (node, *ancestors(node)):
        if parent.mem_id == scope.mem_id:
            return False
        if parent.tag == "a":
            href = (parent.attributes.get("href") or "").strip()
            return bool(href) and not href.startswith(("#", "javascript:"))
    return False


def _currency_amount(area_text: str, mark: DecimalMark) -> Price | None:
    """The first amount written next to its currency; an amount and a currency in blocks of their own
    ("870" then a currency's abbreviation, "$" then "30.99") are read together, unless the amount's line
    states stock ("72 in stock"): that number counts items."""
    lines = [text_line for text_line in area_text.splitlines() if text_line.strip()]
    for index, text_line in enumerate(lines):
        if not _DIGIT.search(text_line):  # no amount (parse_price gives None): most lines of an article
            continue
        found = parse_price(text_line, decimal_mark=mark)
        if found is not None and found.currency is not None:
            # "Free shipping on orders over $70" below the name: a threshold, as an instalment is no
            # price. Asked only of a line with money on it: on every line with a digit, 0.35 ms of a
            # documentation page that prints a "$".
            found = parse_price(without_other_amounts(text_line), decimal_mark=mark)
        if found is not None and found.currency is None:
            before = lines[index - 1] if index else ""
            after = lines[index + 1] if index + 1 < len(lines) else ""
            # "72 in stock" below a "Price: $" whose digits are drawn by CSS sprites: a count of items, no
            # amount. Asked only beside a currency's line: the stock phrases' patterns, tried on every line
            # with a number, were most of the product step on documentation pages that print a "$".
            joined = None
            if _only_currency(after):
                joined = f"{text_line} {after}"
            elif _only_currency(before):
                joined = f"{before} {text_line}"
            if joined is not None and availability_in(text_line) is None:
                found = parse_price(without_other_amounts(joined), decimal_mark=mark)
        if found is not None and found.currency is not None and found.amount > 0:
            return found
    return None


def _only_currency(text_line: str) -> bool:
    # A line that is only a currency is short ("€", "USD", "Kč"): longer ones are not searched at all.
    return (
        len(text_line) <= CURRENCY_LINE_CHARS
        and find_currency(text_line) is not None
        and not any(char.isdigit() for char in text_line)
    )


def card_of(node: LexborNode, scope: LexborNode, judged: dict[int, bool] | None = None) -> LexborNode | None:
    """The block around ``node`` that is one of several like blocks (same tag and class), each with a price.

    Those are a listing's cards, or a grid of other products nobody marked as such: a product page shows
    its own price once, in a block of its own. ``judged`` keeps each block's verdict for the next node
    (a listing's hundreds of price elements share their ancestors: parsing the same siblings' prices again
    for each was most of the product step on a shop's category page).
    """
    judged = {} if judged is None else judged
    for block in ancestors(node):
        parent = block.parent
        if block.mem_id == scope.mem_id or parent is None:
            return None
        if block.mem_id not in judged:
            judged[block.mem_id] = _is_card(block, parent)
        if judged[block.mem_id]:
            return block
    return None


def _is_card(block: LexborNode, parent: LexborNode) -> bool:
    kind = block.attributes.get("class")
    if not kind:
        return False
    alike = [
        child for child in parent.iter() if child.tag == block.tag and child.attributes.get("class") == kind
    ]
    return len(alike) >= CARD_SIBLINGS and all(_priced(child) for child in alike[:CARD_SIBLINGS])


def _priced(block: LexborNode) -> bool:
    found = parse_price(block.text(separator=" ")[:CARD_CHARS])
    return found is not None and found.currency is not None


def elsewhere(node: LexborNode, scope: LexborNode) -> bool:
    """True when ``node`` sits in a container about other products (related items, cards, a mini-cart…)."""
    for parent in ancestors(node):
        if parent.mem_id == scope.mem_id:
            return False
        if about_others(parent):
            return True
    return False


def about_others(container: LexborNode) -> bool:
    """True when ``container`` is about other products, as its tag (``nav``, ``aside``…) or class or id say.

    A container holding an ``<h1>`` is not, whatever its class: it is the page's own product block, which
    some platforms class as one ("detail-card", a "listing" for a marketplace's item); cards of a listing
    or a carousel title their products with lesser headings.
    """
    tag = container.tag
    if tag in PAGE_FRAME_TAGS:
        return True
    aside = tag == "aside" or (_may_name_others(container) and bool(ELSEWHERE_WORDS & words(container)))
    return (aside or _headed_as_others(container)) and container.css_first("h1") is None


def _headed_as_others(container: LexborNode) -> bool:
    """True when ``container`` opens with a heading that names other products ("Use it with", "Customers
    also bought", "Vous aimerez aussi"): a block nobody classed as related items, whose prices are theirs
    (a cross-sell's "$40.00" under sephora.com's "Use it with", read as the product's)."""
    if container.tag not in HEADED_BLOCK_TAGS:  # most containers of a page are inline (code, links)
        return False
    child = container.child
    while child is not None and child.tag in ("-text", "-comment"):
        child = child.next
    return child is not None and child.tag in OTHERS_HEADINGS and bool(_OTHERS_TITLE.match(line(child)))


def _may_name_others(container: LexborNode) -> bool:
    """False when no word of ``container``'s class or id can be one of ``ELSEWHERE_WORDS``.

    Each of :func:`~data_plane.extract.markup.words` is a piece of a class or id token, lower-cased, or a
    whole token without its ``-`` and ``_``: either way it is in the class and id lower-cased without
    those. That one search is cheaper than splitting the words of every container met, most of them
    seen only once (a unique id): ~20% of :func:`own_text`'s CPU.
    """
    attributes = container.attributes
    named = f"{attributes.get('class') or ''} {attributes.get('id') or ''}"
    return _ELSEWHERE_HINT.search(named.lower().replace("-", "").replace("_", "")) is not None


def unseen(node: LexborNode) -> bool:
    """True when ``node`` itself is hidden, or is a variant picker's option: what it says is not about
    the product as shown.

    Hidden: the ``hidden`` attribute, ``aria-hidden="true"``, ``display: none`` or a class that hides
    (``hidden``, ``d-none``, Magento's ``no-display``): a "notify me when back in stock" dialog, another
    variant's message kept for the shop's scripts. (Scripts, templates and ``visibility: hidden`` are gone
    from the tree already, see :class:`~data_plane.extract.markup.Markup`.) An ``<option>`` or
    ``<select>`` lists variants: "XL - sold out" is one size's stock, not the product's.
    """
    if node.tag in PICKER_TAGS:
        return True
    attributes = node.attributes
    if "hidden" in attributes or (attributes.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = attributes.get("style")
    if style and _DISPLAY_NONE.search(style):
        return True
    classes = (attributes.get("class") or "").lower().split()
    return not HIDING_CLASSES.isdisjoint(classes)


def unseen_within(node: LexborNode, scope: LexborNode | None = None) -> bool:
    """True when ``node`` or one of its ancestors (below ``scope``, else up to the root) is :func:`unseen`."""
    if unseen(node):
        return True
    for parent in ancestors(node):
        if scope is not None and parent.mem_id == scope.mem_id:
            return unseen(parent)
        if unseen(parent):
            return True
    return False
