"""Which engine reads a page's main text, and from how much of the page: chosen once per page, cheaply.

trafilatura is the engine that chooses the main block of a news or blog page best, and the costliest
part of extracting one (it parses the page again with lxml, then runs readability and jusText to
compare). So it reads only what needs its judgement:

- ``docs``: a page a documentation generator built (:data:`DOCS_MARKERS`) is read by resiliparse,
  whose main content is nearly the whole page there (see :mod:`~data_plane.extract.text`);
- ``shop``: a product page (one product, no article in its structured data) is read by resiliparse
  too. Its record is judged by its product fields, which never come from the main text; trafilatura
  cost 100-670 ms of CPU on a large shop page (Amazon, Etsy, Wayfair), resiliparse 7-60;
- ``article``: a page with exactly one article element (``<article>`` or ``itemprop=articleBody``,
  the outermost of nested ones) of at least :data:`MIN_ARTICLE_WORDS` words hands trafilatura that
  element alone: the same text in most cases, for a third to a tenth of the CPU;
- ``page``: every other page, trafilatura on the whole page.

The article element is read from the pruned tree of :class:`~data_plane.extract.markup.Markup`: no
scripts, styles or struck-through prices, and a line break after each block, which trafilatura reads
as the whitespace it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from selectolax.lexbor import LexborNode

from data_plane.extract.markup import Markup, ancestors, unique

RouteName = Literal["docs", "shop", "article", "page"]

DOCS_MARKERS = re.compile(
    r"documentation_options\.js|<meta\s+name=[\"']?generator[\"']?\s+content=[\"']?"
    r"(?:sphinx|docutils|mkdocs|docusaurus)",
    re.I,
)
"""A page built by Sphinx (every Sphinx theme loads ``documentation_options.js``), MkDocs or Docusaurus.
None of the 1200 dev and test pages matches; all 35 NumPy docs pages of 100 kB and more do."""
ARTICLE_ELEMENTS = "article, [itemprop=articleBody]"
MIN_ARTICLE_WORDS = 100
"""A lone article element with fewer words is more likely a teaser or a wrapper than the article."""


@dataclass(frozen=True, slots=True)
class TextRoute:
    """The engine for a page's main text; ``element_html`` is the article element's, for ``article``."""

    name: RouteName
    element_html: str | None = None


def text_route(html: str, markup: Markup | None = None, *, product_page: bool = False) -> TextRoute:
    """The route of ``html`` (whose pruned tree is ``markup``); ``product_page`` when the page is read as
    one product's page and declares no article."""
    if DOCS_MARKERS.search(html):
        return TextRoute("docs")
    if product_page:
        return TextRoute("shop")
    element = article_element(markup) if markup is not None else None
    if element is not None:
        return TextRoute("article", f"<html><body>{element.html}</body></html>")
    return TextRoute("page")


def article_element(markup: Markup) -> LexborNode | None:
    """The page's only outermost article element, when it holds ``MIN_ARTICLE_WORDS`` words or more."""
    nodes = unique(markup.tree.css(ARTICLE_ELEMENTS))
    ids = {node.mem_id for node in nodes}
    outermost = [node for node in nodes if not any(parent.mem_id in ids for parent in ancestors(node))]
    if len(outermost) != 1:
        return None
    element = outermost[0]
    return element if len(element.text(separator=" ").split()) >= MIN_ARTICLE_WORDS else None
