"""A page's copy without the product it declares: what the visible-page path has to work from.

Self-supervised product labels (``data/build_markup_products.py``) are read from what a page declares
(JSON-LD, microdata, RDFa, OpenGraph and ``product:`` meta tags). Scoring the extractor on the page as
published would mostly score the copying of that declaration; scoring it on this copy scores what the
page shows a reader, which is all an unseen shop without markup offers. Removed:

- ``<script type="application/ld+json">`` blocks;
- microdata and RDFa attributes (``itemscope``, ``itemtype``, ``itemprop``, ``itemid``, ``itemref``,
  ``typeof``, ``property``, ``vocab``, ``resource``, ``about``, ``prefix``, and the ``content``/``datetime``
  values they carry), and the invisible elements that exist only for them (``<meta itemprop>``,
  ``<link itemprop>``);
- ``<meta>`` tags whose ``property`` or ``name`` starts with ``og:``, ``product:`` or ``twitter:``.

Kept: everything a reader sees, and the page's own scripts (an embedded state JSON is the page's
program, not a declaration meant for machines).
"""

from __future__ import annotations

import re

import lxml.html

_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
MARKUP_ATTRIBUTES = (
    "itemscope", "itemtype", "itemprop", "itemid", "itemref",
    "typeof", "property", "vocab", "resource", "about", "prefix",
)  # fmt: skip
_META_PREFIXES = ("og:", "product:", "twitter:")


def without_markup(html: str) -> str:
    """``html`` with its declared structured data removed (see the module docstring)."""
    tree = lxml.html.document_fromstring(_XML_DECLARATION.sub("", html, count=1))
    for script in tree.xpath("//script"):
        if "ld+json" in (script.get("type") or "").lower():
            script.drop_tree()
    for meta in tree.xpath("//meta|//link"):
        name = (meta.get("property") or meta.get("name") or "").lower()
        if meta.get("itemprop") is not None or name.startswith(_META_PREFIXES):
            meta.drop_tree()
    for element in tree.xpath("//*[@itemprop or @itemscope or @itemtype or @property or @typeof]"):
        if element.get("itemprop") is not None or element.get("property") is not None:
            # the machine-readable value beside the shown one ("<span itemprop=price content=12.99>")
            for name in ("content", "datetime"):
                element.attrib.pop(name, None)
        for name in MARKUP_ATTRIBUTES:
            element.attrib.pop(name, None)
    return lxml.html.tostring(tree, encoding="unicode", doctype="<!DOCTYPE html>")
