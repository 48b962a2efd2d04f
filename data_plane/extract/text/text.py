"""Main text with boilerplate removed (trafilatura, or resiliparse on documentation and shop pages), and an
article's body.

Two engines. trafilatura's cascade (lxml, its extractor, readability and jusText to compare, a
baseline) chooses the main block of news, blog and shop pages best: resiliparse's main-content
extraction alone scores segment F1 0.863 on the dev pages against 0.936, and taking resiliparse's
text on any class of news pages told by text length or by its share of the page cost 0.001-0.015
there. But trafilatura costs 100-200 ms of CPU on a large documentation page, whose main content is
nearly the whole page, while resiliparse (C, over Lexbor) reads it in a few milliseconds with the
same text (token precision 0.99 and recall 1.0 of one against the other, means over NumPy's built
docs). So a page a documentation generator made is read by resiliparse, and so is a product page, whose
record is judged by its product fields; news and blog pages by trafilatura, from their article element
alone where there is one (:mod:`~data_plane.extract.text.text_route` chooses).

trafilatura runs without its metadata pass: that pass guesses dates relative to today's date, which
would make records depend on when they were extracted. Both outputs are deterministic for given HTML.
"""

from __future__ import annotations

import contextlib
import logging
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable

import trafilatura
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.markup import line as line_of
from dualplane.data_plane.extract.metrics import text_failed
from dualplane.data_plane.extract.text._trafilatura import SHORTCUTS
from dualplane.data_plane.extract.text.boilerplate import trim_boilerplate
from dualplane.data_plane.extract.text.text_route import TextRoute, text_route

MAX_TEXT_BYTES = 300_000
"""Main text (and article body) longer than this in UTF-8 is cut, so that a record holding both fits a
default 1 MB Kafka message; the raw page keeps the whole HTML. Counted in bytes, not characters, so
that a long article in a one-byte script is not cut at a third of what a three-byte script may hold
(a 100,000-character cut lost the references of a long Wikipedia page)."""
MAX_HTML_CHARS = 3_000_000
"""trafilatura reads at most this much HTML (after scripts, styles and comments are cut from larger
pages): its time grows faster than linearly, and the first megabytes hold far more than MAX_TEXT_BYTES."""
KICKER_WORDS = 4
KICKER_CHARS = 40
"""A leading line is a kicker ("Culture", "24 July 2015") when it has at most KICKER_WORDS words in at
most this many columns."""
BYLINE_WORDS = 12
DOCS_MIN_CHARS = 2000
"""Less main text than this on a documentation page, even in its ``<main>`` element, and trafilatura
reads the page after all, unless the main content holds ``DOCS_MIN_SHARE`` of the page's text."""
DOCS_MIN_SHARE = 0.5
"""A short documentation page (a small class, a trait, a redirect) whose main content holds at least this
share of the whole page's text is read by resiliparse alone: its rules dropped little, so no index of
links was lost. Most pages of the documentation sites of ``benchmarks/doc_sites.py`` are short: with
``DOCS_MIN_CHARS`` alone, trafilatura read 33 of 40 rustdoc pages and 23 of 40 Javadoc pages of their
``dev`` sites whole. On those, resiliparse's text kept 0.85 (Javadoc) of trafilatura's words at this
share; on the pages below it (Doxygen-like indexes of links, 404 pages, a release note beside a long
menu), it kept a fifth to a half, and trafilatura reads them."""

_BULK = re.compile(
    r"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<svg\b.*?</svg\s*>", re.I | re.S
)


logging.getLogger("trafilatura").setLevel(logging.ERROR)  # it logs every page it finds too short


def main_text(
    html: str,
    url: str | None,
    link_texts: Callable[[], Collection[str]] | None = None,
    *,
    route: TextRoute | None = None,
) -> str | None:
    """The page's main content as plain text (paragraphs on their own lines), or ``None`` when empty.

    Read by the engine ``route`` names (:mod:`~data_plane.extract.text.text_route`; by default, a
    documentation page by resiliparse and any other by trafilatura); where resiliparse gives nothing,
    trafilatura reads the route's element (a lone article or main element), and where that gives nothing
    too, the whole page.
    Related-content tails and copyright lines that trafilatura keeps are cut by their wording, and
    teaser lines by the texts of the page's links, which ``link_texts`` gives when asked (only for a
    line that looks like a teaser; :func:`link_texts`, :mod:`~data_plane.extract.text.boilerplate`).
    """
    route = route or text_route(html)
    if len(html) > MAX_HTML_CHARS:
        html = _BULK.sub("", html)[:MAX_HTML_CHARS]
    text = None
    if route.name == "docs":
        text = docs_text(html)
    elif route.name == "shop":
        text = _plain_text(HTMLTree.parse(html), main_content=True) or None
    if text is None and route.name != "shop" and route.element is not None:
        # On a documentation page where resiliparse found too little, its lone article or main element
        # (Javadoc 17's <main>, MkDocs Material's <article>) holds what trafilatura keeps of the whole page.
        text = _trafilatura_text(route.element.html, url)
    if text is None:
        text = _trafilatura_text(html, url)
    text = trim_boilerplate(text or "", link_texts).strip()
    return clip_text(text) or None


def resiliparse_text(html: str, link_texts: Callable[[], Collection[str]] | None = None) -> str | None:
    """Resiliparse's main content of ``html``, as :func:`main_text` gives a text (boilerplate lines cut,
    clipped), or ``None`` when empty: what a page of a host :class:`~.site_trust.SiteTrust` trusts holds."""
    text = _plain_text(HTMLTree.parse(html), main_content=True)
    return clip_text(trim_boilerplate(text, link_texts).strip()) or None


def _trafilatura_text(html: str, url: str | None) -> str | None:
    try:
        with contextlib.ExitStack() as shortcuts:
            for shortcut in SHORTCUTS.values():
                shortcuts.enter_context(shortcut())
            text: str | None = trafilatura.extract(
                html,
                url=url,
                include_comments=False,
                include_tables=True,
                deduplicate=False,
                with_metadata=False,
            )
    except Exception as error:  # trafilatura and lxml raise a zoo of errors on pathological markup
        # The record goes on without a main text (its title, links, data are still worth keeping), but
        # the failure is counted, by error type, and logged where an operator looks.
        text_failed("trafilatura", error)
        logging.getLogger(__name__).warning(
            "trafilatura failed on %s (%s: %s): the record has no main text", url, type(error).__name__, error
        )
        return None
    return text


def docs_text(html: str) -> str | None:
    """Resiliparse's main content of documentation page ``html``, or ``None`` when it finds little.

    Where its main-content rules find little (an index of names, a list of release notes: lists of
    links they take for navigation), the whole text of the page's ``<main>`` is taken, as trafilatura
    does there (NumPy's index of 125,000 characters: the same words, in 16 ms instead of 900). A short
    page's main content is taken when it holds ``DOCS_MIN_SHARE`` of the page's whole text.
    """
    tree = HTMLTree.parse(html)
    text = _plain_text(tree, main_content=True)
    if len(text) >= DOCS_MIN_CHARS:
        return text
    main = tree.document.query_selector("main, [role=main]") if tree.document is not None else None
    whole = _plain_text(HTMLTree.parse(main.html), main_content=False) if main is not None else ""
    if len(whole) >= DOCS_MIN_CHARS:
        return whole
    if text.strip() and len(text) >= DOCS_MIN_SHARE * len(_plain_text(tree, main_content=False)):
        return text
    return None


def _plain_text(tree: HTMLTree, *, main_content: bool) -> str:
    # One line per block, as trafilatura writes it; no link targets, image alt texts or list bullets.
    text: str = extract_plain_text(
        tree,
        main_content=main_content,
        preserve_formatting=True,
        list_bullets=False,
        alt_texts=False,
        links=False,
    )
    return text


def link_texts(page: Markup) -> frozenset[str]:
    """The texts of the page's links, spaces collapsed: teaser lines in the main text are told by them."""
    return frozenset(line_of(anchor) for anchor in page.tree.css("a[href]"))


def article_body(text: str, *, headline: str | None, standfirsts: Iterable[str] = ()) -> str | None:
    """``text`` without the lines that open an article page but are not its body.

    Leading lines are dropped while they are the headline, a standfirst (text the markup marks as
    one, see :func:`~data_plane.extract.article.article_markup.standfirsts`), a short kicker ("Culture", a
    date) or a "By …" byline; paragraphs are separated by a blank line. The page description is not
    dropped for being the description: many sites make it from the first paragraph of the body.
    """
    skip = {_key(value) for value in (headline, *standfirsts) if value}
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    start = 0
    while start < len(lines) - 1 and _is_preamble(lines[start], skip):
        start += 1
    return clip_text("\n\n".join(lines[start:])) or None


def clip_text(text: str) -> str:
    """``text`` cut to at most ``MAX_TEXT_BYTES`` of UTF-8, at a character boundary."""
    if len(text) <= MAX_TEXT_BYTES // 4:  # no character takes more than four bytes
        return text
    return text.encode("utf-8")[:MAX_TEXT_BYTES].decode("utf-8", "ignore")


def _is_preamble(line: str, skip: set[str]) -> bool:
    words = line.split()
    if _key(line) in skip or (len(words) <= KICKER_WORDS and _width(line) <= KICKER_CHARS):
        return True
    return line.lower().startswith("by ") and len(words) <= BYLINE_WORDS


def _width(line: str) -> int:
    """Characters, wide ones (CJK) counted twice: a sentence in Chinese may hold no space at all."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)


def _key(text: str) -> str:
    return " ".join(text.lower().split())
