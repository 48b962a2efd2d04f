"""Which engine reads a page's main text, and from how much of the page: chosen once per page, cheaply.

trafilatura is the engine that chooses the main block of a news or blog page best, and the costliest
part of extracting one (it parses the page again with lxml, then runs readability and jusText to
compare). So it reads only what needs its judgement:

- ``docs``: a page a documentation generator built (:data:`DOCS_MARKERS`), or one whose text is mostly
  preformatted (:func:`preformatted_page`: generated source code, an RFC, a plain-text report), is read
  by resiliparse, whose main content is nearly the whole page there (see :mod:`~data_plane.extract.text`);
- ``shop``: a product page (one product, no article in its structured data) is read by resiliparse
  too. Its record is judged by its product fields, which never come from the main text; trafilatura
  cost 100-670 ms of CPU on a large shop page (Amazon, Etsy, Wayfair), resiliparse 7-60;
- ``element``: a page with exactly one article element (``<article>`` or ``itemprop=articleBody``,
  the outermost of nested ones), or else exactly one main element (``<main>``, ``role=main``), or else
  exactly one element named as an article's content (:data:`CONTENT_ELEMENTS`), of at least
  :data:`MIN_ELEMENT_WORDS` words hands trafilatura that element alone: the same text on most pages,
  for a third to a tenth of the CPU (a site's header, menus, footer and sidebars are outside);
- ``page``: every other page, trafilatura on the whole page.

The element is cut from the page as parsed, before the markup heuristics prune the tree, so that
trafilatura reads it as it would read it within the whole page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from selectolax.lexbor import LexborHTMLParser, LexborNode

from dualplane.data_plane.extract.markup import ancestors, unique

RouteName = Literal["docs", "shop", "element", "page"]

DOCS_MARKERS = re.compile(
    r"documentation_options\.js|<meta\s+name=[\"']?generator[\"']?\s+content=[\"']?"
    r"(?:sphinx|docutils|mkdocs|docusaurus)",
    re.I,
)
"""A page built by Sphinx (every Sphinx theme loads ``documentation_options.js``), MkDocs or Docusaurus.
None of the 1200 dev and test pages matches; all 35 NumPy docs pages of 100 kB and more do."""
DOCS_SCRIPTS = '[src*="documentation_options.js" i]'
DOCS_GENERATORS = ("sphinx", "docutils", "mkdocs", "docusaurus")
"""The same markers read from the parsed tree (:func:`documentation_page`): searching a large page's
HTML for them case-insensitively cost 10-12 ms of CPU, a tenth of its extraction."""
ARTICLE_ELEMENTS = "article, [itemprop=articleBody]"
MAIN_ELEMENTS = "main, [role=main]"
_CONTENT_ID_WORDS = ("entry-content", "article-content", "art-content", "article__content", "article-body",
                     "article__body", "articlebody", "articleBody", "body-text")  # fmt: skip
_CONTENT_CLASS_WORDS = (
    "post-text", "post_text", "post-body", "post-entry", "postentry", "post-content", "post_content",
    "postcontent", "postContent", "post_inner_wrapper", "article-text", "articletext", "articleText",
    "entry-content", "page-content", "text-content", "article-content", "art-content", "article__content",
    "article-body", "article__body", "articlebody", "articleBody", "ArticleContent", "body-text",
    "article__container",
)  # fmt: skip
CONTENT_ELEMENTS = ", ".join(
    [f"{tag}[class={word}]" for tag in ("div", "section") for word in ("post", "entry")]
    + [f"{tag}[id=articleContent]" for tag in ("div", "section")]
    + [f"{tag}[id*={word}]" for tag in ("div", "section") for word in _CONTENT_ID_WORDS]
    + [f"{tag}[class*={word}]" for tag in ("div", "section") for word in _CONTENT_CLASS_WORDS]
)
"""Where a page has neither, a ``<div>`` or ``<section>`` named as an article's content: the names of
trafilatura's first choice (``BODY_XPATH[0]`` in its ``xpaths.py``: ``post-content``, ``entry-content``,
``article-body``...), case as there. On a page without an article or main element, trafilatura picks
such an element first anyway; handed that element alone, it reads the same text on most pages for a
third of the CPU."""
PREFORMATTED_SHARE = 0.5
"""A page with at least this share of its visible text (white space aside) inside ``<pre>`` is a listing.
trafilatura's choice there is the listing itself, and its rules, run on every node, cost most where a
syntax highlighter wraps every token in a ``<span>``: on the 100 code pages of kaitai-formats the crawl
benchmark serves, resiliparse's main content holds 0.999 of trafilatura's words (token precision 0.963)
for 20 ms of CPU instead of 255. Of the 1,215 dev and test pages, 3 reach this share (an RFC, a results
list in plain text, a Japanese book page); the other pages of the crawl's sites stay under 0.4."""
MIN_ELEMENT_WORDS = 100
"""A lone article or main element with fewer words is more likely a teaser or a wrapper than the page's
content."""


@dataclass(frozen=True, slots=True)
class MainElement:
    """The element that holds a page's main content, as HTML of its own, how many words it holds, and how
    it was found (to find it again in the pruned tree)."""

    html: str
    words: int
    selector: str
    tag: str
    attributes: dict[str, str | None]

    def shown_in(self, pruned: LexborHTMLParser) -> bool:
        """Whether the pruned tree still has this element: one hidden until a script shows it (a sign-up
        dialog's ``<article>``) is pruned, and is not the page's content."""
        node = _only_outermost(pruned.css(self.selector))
        return node is not None and node.tag == self.tag and node.attributes == self.attributes


@dataclass(frozen=True, slots=True)
class TextRoute:
    """The engine for a page's main text; ``element`` is what trafilatura reads on route ``element``."""

    name: RouteName
    element: MainElement | None = None


def text_route(
    html: str, element: MainElement | None = None, *, product_page: bool = False, docs: bool | None = None
) -> TextRoute:
    """The route of ``html``, whose main element (:func:`main_element`, and shown) is ``element``;
    ``product_page`` when the page is read as one product's page and declares no article; ``docs``
    whether a documentation generator built it (:func:`documentation_page`), searched for in ``html``
    when not given."""
    if docs if docs is not None else DOCS_MARKERS.search(html):
        return TextRoute("docs")
    if product_page:
        return TextRoute("shop")
    return TextRoute("element", element) if element is not None else TextRoute("page")


def documentation_page(tree: LexborHTMLParser) -> bool:
    """Whether a documentation generator built the page ``tree`` holds (not yet pruned: its scripts
    are read): a script or link to Sphinx's ``documentation_options.js``, or a generator ``<meta>``
    naming Sphinx, docutils, MkDocs or Docusaurus."""
    if tree.css_first(DOCS_SCRIPTS) is not None:
        return True
    for meta in tree.css("meta[name=generator i]"):
        if (meta.attributes.get("content") or "").strip().lower().startswith(DOCS_GENERATORS):
            return True
    return False


def preformatted_page(tree: LexborHTMLParser) -> bool:
    """Whether at least ``PREFORMATTED_SHARE`` of the visible text of ``tree`` (pruned: no scripts or
    styles) is inside ``<pre>`` elements. Pages without one, nearly all, cost one CSS lookup."""
    blocks = tree.css("pre")
    if not blocks or tree.body is None:
        return False
    listed = sum(_visible_chars(block.text()) for block in blocks if not _inside_pre(block))
    return listed >= PREFORMATTED_SHARE * _visible_chars(tree.body.text())


def _visible_chars(text: str) -> int:
    return len("".join(text.split()))


def _inside_pre(node: LexborNode) -> bool:
    return any(parent.tag == "pre" for parent in ancestors(node))


def main_element(tree: LexborHTMLParser) -> MainElement | None:
    """The element of ``tree`` (not yet pruned) that holds the page's main content: its only outermost
    article element, else its only outermost main element, else its only outermost content element
    (:data:`CONTENT_ELEMENTS`), when that holds ``MIN_ELEMENT_WORDS`` words
    or more. Read before :class:`~data_plane.extract.markup.Markup` prunes the tree: pruning drops what
    a page hides until a script shows it, a long read's whole story on some sites; but an element pruned
    whole is no main element (:meth:`MainElement.shown_in`)."""
    for selector in (ARTICLE_ELEMENTS, MAIN_ELEMENTS, CONTENT_ELEMENTS):
        element = _only_outermost(tree.css(selector))
        if element is not None:
            words = len(element.text(separator=" ").split())
            if words < MIN_ELEMENT_WORDS:
                return None
            html = f"<html><body>{element.html}</body></html>"
            return MainElement(html, words, selector, element.tag or "", dict(element.attributes))
    return None


def _only_outermost(nodes: list[LexborNode]) -> LexborNode | None:
    listed = unique(nodes)
    ids = {node.mem_id for node in listed}
    outermost = [node for node in listed if not any(parent.mem_id in ids for parent in ancestors(node))]
    return outermost[0] if len(outermost) == 1 else None
