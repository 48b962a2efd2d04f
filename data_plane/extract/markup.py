"""A page's HTML prepared for markup heuristics, and the small queries they share.

The tree is parsed with selectolax (Lexbor: fast, forgiving of broken HTML) and then changed for
reading: scripts, styles and templates are dropped, and so is every struck-through price (``<del>``,
``<s>``, ``line-through``, class or id words like ``old``, ``was``, ``compare``, ``rrp``), so that no
heuristic can pick up the price a product used to cost, and every element styled ``visibility: hidden``
(a notification dialog's "we don't have that one in stock" is no statement about the product). Elements
styled ``display: none`` stay: shops' scripts show some of them (a low-stock warning) on load. Block
elements end with a line break, so text reads line by line as a browser shows it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

from selectolax.lexbor import LexborHTMLParser, LexborNode

DROPPED = "script, style, noscript, template, svg, iframe, del, s, strike"
BLOCKS = (
    "p, div, li, ul, ol, dl, dt, dd, tr, td, th, table, section, article, aside, header, footer, nav, main, "
    "h1, h2, h3, h4, h5, h6, br, form, figure, figcaption, blockquote, pre, address, button"
)
# Words that mark a price as a former one; the weak ones only on elements whose class or id says "price".
OLD_PRICE_WORDS = frozenset(
    {"rrp", "msrp", "uvp", "compareat", "strikethrough", "listprice", "originalprice", "wasprice", "oldprice"}
)  # fmt: skip
"""Not "regular-price": Magento and Shopify themes mark the *current* price so when nothing is on sale
(a sale's former price is struck, or classed "old-price", and goes anyway)."""
WEAK_OLD_PRICE_WORDS = frozenset({"old", "was", "compare", "strike", "crossed", "before", "original"})
OLD_PRICE_HINTS = (
    "rrp", "msrp", "uvp", "compare", "strike", "list", "original", "was", "old", "crossed", "before"
)  # fmt: skip
"""Every class or id token that makes one of the words above holds one of these. The CSS engine picks
the few nodes that do (about 60 of the ~600 with a class or id on a real page) and only those are
judged in Python: judging every node took 1.5 ms of the ~35 ms a real page costs, this takes 0.6. A
word that exists only once separators inside it are removed ("ms-rp") is no longer seen; "list-price",
"compare_at", "oldPrice" are."""
_STRUCK_CANDIDATES = ", ".join(
    ["[style]", *(f'[{attribute}*="{hint}" i]' for attribute in ("class", "id") for hint in OLD_PRICE_HINTS)]
)
_DROPPED_TAGS = frozenset(tag.strip() for tag in DROPPED.split(","))
_DOOMED_CANDIDATES = f"{DROPPED}, {_STRUCK_CANDIDATES}"
WORDS_CACHE_SIZE = 8192
_WORD_SPLIT = re.compile(r"[\s_\-]+|(?<=[a-z])(?=[A-Z])")
_SPACES = re.compile(r"[^\S\n]+")


class Markup:
    """One page's tree, ready for heuristics. Build one per page: reading it changes nothing.

    Given a parsed tree rather than HTML, it changes that tree: read anything else the page needs
    from it (its links) first.
    """

    def __init__(self, html: str | LexborHTMLParser) -> None:
        self.tree = LexborHTMLParser(html) if isinstance(html, str) else html
        self._metas = _meta_values(self.tree)
        self.lang = _attribute(self.tree.css_first("html"), "lang")
        self._headed_main: LexborNode | None = None
        # One query, in document order: a node comes before the nodes inside it. Removed last first, each
        # goes before any that holds it, so no removal touches a node an earlier one freed; without
        # looking up every node's ancestors (a tenth of the pruning's time).
        doomed = [
            node for node in self.tree.css(_DOOMED_CANDIDATES) if node.tag in _DROPPED_TAGS or _struck(node)
        ]
        for node in reversed(unique(doomed)):
            node.decompose()
        for node in self.tree.css(BLOCKS):
            node.insert_after("\n")

    def meta(self, *names: str) -> str | None:
        """The first non-empty ``content`` of a ``<meta>`` named (name, property, itemprop) in ``names``."""
        for name in names:
            value = self._metas.get(name.lower())
            if value:
                return value
        return None

    def main(self, *, headed: bool = False) -> LexborNode:
        """The main content: ``<main>``, ``[role=main]``, ``#content``, else the body (or the root).

        With ``headed``, a candidate holding no ``<h1>`` is passed over when the page has one: some shop
        templates name a header or sidebar block "content", and the product is then outside it. (An
        article's headline is looked for without it: a site's logo is often the first ``<h1>``, outside
        ``<main>``, where the page's title then stands in.)
        """
        if headed and self._headed_main is not None:
            return self._headed_main
        headings = self.tree.css("h1") if headed else []
        for selector in ("main", "[role=main]", "#content", "#main", "body"):
            node = self.tree.css_first(selector)
            if node is None:
                continue
            if not headings or selector == "body" or any(inside(heading, node) for heading in headings):
                if headed:
                    self._headed_main = node
                return node
        root = self.tree.root
        assert root is not None  # Lexbor always builds <html>, even from an empty string
        return root


def words(node: LexborNode) -> frozenset[str]:
    """Lower-cased words of ``node``'s class and id: ``"price--old productPrice"`` -> price, old, product…"""
    attributes = node.attributes
    return _words(attributes.get("class") or "", attributes.get("id") or "")


@functools.lru_cache(maxsize=WORDS_CACHE_SIZE)
def _words(class_value: str, id_value: str) -> frozenset[str]:
    # Pages repeat the same class strings on thousands of nodes: splitting each once saves a third of
    # the markup heuristics' time.
    found: set[str] = set()
    for raw in (class_value, id_value):
        for token in raw.split():
            found.add(token.lower().replace("-", "").replace("_", ""))
            found.update(part.lower() for part in _WORD_SPLIT.split(token) if part)
    return frozenset(found)


def text(node: LexborNode, limit: int | None = None) -> str:
    """``node``'s visible text, spaces collapsed, one line per block; about ``limit`` characters at most."""
    raw = node.text(separator=" ")
    lines = (_SPACES.sub(" ", line).strip() for line in raw[:limit].splitlines())
    return "\n".join(line for line in lines if line)


def line(node: LexborNode) -> str:
    """``node``'s visible text on one line."""
    return " ".join(node.text(separator=" ").split())


def ancestors(node: LexborNode) -> Iterator[LexborNode]:
    parent = node.parent
    while parent is not None and parent.tag not in ("html", "-undef", None):
        yield parent
        parent = parent.parent


def innermost(nodes: Iterable[LexborNode]) -> list[LexborNode]:
    """``nodes`` without those that contain another of them, in document order."""
    listed = list(nodes)
    ids = {node.mem_id for node in listed}
    outer = {parent.mem_id for node in listed for parent in ancestors(node) if parent.mem_id in ids}
    return [node for node in listed if node.mem_id not in outer]


def unique(nodes: Iterable[LexborNode]) -> list[LexborNode]:
    """``nodes`` without repeats, in their order: Lexbor lists a node once for each selector of a
    comma-separated list that it matches."""
    return list({node.mem_id: node for node in nodes}.values())  # dicts keep the first key's place


def inside(node: LexborNode, container: LexborNode) -> bool:
    return node.mem_id == container.mem_id or any(p.mem_id == container.mem_id for p in ancestors(node))


def _struck(node: LexborNode) -> bool:
    attributes = node.attributes  # built anew on each access: read once for all three
    style = (attributes.get("style") or "").replace(" ", "").lower()
    if "line-through" in style or "visibility:hidden" in style:
        return True
    found = _words(attributes.get("class") or "", attributes.get("id") or "")
    return bool(OLD_PRICE_WORDS & found) or (
        bool(WEAK_OLD_PRICE_WORDS & found) and any("price" in w for w in found)
    )


def _attribute(node: LexborNode | None, name: str) -> str | None:
    return ((node.attributes.get(name) or "").strip() or None) if node is not None else None


def _meta_values(tree: LexborHTMLParser) -> dict[str, str]:
    values: dict[str, str] = {}
    for meta in tree.css("meta[content]"):
        attributes = meta.attributes  # built anew on each access: read once for all five
        content = " ".join((attributes.get("content") or "").split())
        if not content:
            continue
        for key in ("name", "property", "itemprop", "http-equiv"):
            name = (attributes.get(key) or "").strip().lower()
            if name and name not in values:
                values[name] = content
    return values
