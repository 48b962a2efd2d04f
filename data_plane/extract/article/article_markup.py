"""An article read from plain markup: headline, authors and publication time without structured data.

The *article area* is the ``<article>`` holding the page's ``<h1>`` (or the only ``<article>``, or an
``itemtype`` Article, else the main content). Authors come from ``itemprop=author``, elements whose
class says "author", ``rel=author`` links, ``<meta name=author>``, then a "By …" byline; dates from
``article:published_time`` and similar meta tags, then the area's ``<time datetime>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from selectolax.lexbor import LexborNode

from dualplane.data_plane.extract.article.dates import parse_datetime
from dualplane.data_plane.extract.fields import ArticleFields
from dualplane.data_plane.extract.markup import Markup, ancestors, innermost, line, unique, words
from dualplane.data_plane.extract.text.text import link_texts

MAX_AUTHORS = 10
MAX_AUTHOR_CHARS = 80
DATE_METAS = (
    "article:published_time", "og:published_time", "datepublished", "pubdate", "publishdate",
    "publish-date", "date", "dc.date.issued", "dc.date", "dcterms.created", "dcterms.date",
    "sailthru.date", "parsely-pub-date",
)  # fmt: skip
AUTHOR_WORDS = frozenset({"author", "authors", "byline", "authorname", "contributor"})
STANDFIRST_WORDS = frozenset({"standfirst", "dek", "deck", "subheadline", "subtitle", "subhead", "strapline"})
MAX_STANDFIRSTS = 3
_STANDFIRST_CANDIDATES = ", ".join(
    f'[{attribute}*="{hint}" i]'
    for attribute in ("class", "id")
    for hint in ("stand", "sub", "strap", "dek", "deck")
)
"""Every class or id that makes one of STANDFIRST_WORDS holds one of these: as for authors, the CSS engine
picks the few nodes (judging every node with a class or id cost 1-2 ms of CPU on a large page)."""
MIN_LEAD_WORDS = 8
"""A lead is a sentence or two: a shorter description is a slogan or a label, not the article's opening."""
LEAD_METAS = ("description", "og:description", "twitter:description")
# Every class or id that makes one of AUTHOR_WORDS holds one of these (words() drops "-" and "_"): the
# CSS engine picks those few nodes, and only they are judged in Python, not every node with a class.
_AUTHOR_CANDIDATES = ", ".join(
    f'[{attribute}*="{hint}" i]'
    for attribute in ("class", "id")
    for hint in ("author", "byline", "by-line", "by_line", "contributor")
)
_COMMENT_WORDS = frozenset({"comment", "comments", "reply", "replies", "discussion"})
_BY = re.compile(r"^\s*(?:by|von|par|por|door|di)\s+", re.I)
_SPLIT_NAMES = re.compile(r"\s*(?:,|;|&|\band\b|\bund\b|\bet\b|\by\b|\|)\s*")
_NOT_A_NAME = re.compile(r"\d|@|https?:|\b(?:updated|published|posted|min read|staff)\b", re.I)


@dataclass(frozen=True)
class MarkupArticle:
    """What markup says about an article, and how strongly the page looks like one."""

    fields: ArticleFields
    in_article_element: bool
    has_date_or_byline: bool


def markup_article(page: Markup) -> MarkupArticle:
    """The article the page's markup shows (the body is read separately, by the text extractor)."""
    area, is_article = _area(page)
    published = _published_at(page, area)
    authors = tuple(dict.fromkeys(_authors(page, area)))[:MAX_AUTHORS]
    heading = area.css_first("h1") or page.main().css_first("h1")
    fields = ArticleFields(
        headline=(line(heading) if heading is not None else None) or page.meta("og:title"),
        authors=authors,
        published_at=published,
    )
    return MarkupArticle(fields, is_article, has_date_or_byline=published is not None or bool(authors))


def standfirsts(page: Markup) -> list[str]:
    """Texts the markup marks as a standfirst (dek, subtitle): they open an article but are not its body."""
    nodes = [node for node in unique(page.tree.css(_STANDFIRST_CANDIDATES)) if STANDFIRST_WORDS & words(node)]
    return [text for node in innermost(nodes)[:MAX_STANDFIRSTS] if (text := line(node))]


def shown_lead(page: Markup, text: str, body: str, standfirsts: Iterable[str] = ()) -> str | None:
    """The article's lead when the main ``text`` misses it: the page's description (``<meta>`` description,
    else ``og:``/``twitter:description``), where the page shows it before the ``body`` begins, outside
    any link, unless it is one of the marked ``standfirsts``.

    Sites set the lead (intro, teaser, excerpt) apart from the body, between the headline and the first
    paragraph, and trafilatura drops many of them with the header or by their class; the description
    repeats it. Shown outside a link and before the body, it is the lead; inside a link it is a
    promotion of the article (a teaser in a list), and a description shown nowhere is no lead. A
    standfirst the markup marks as such stays out of the body, as it does when the main text holds it.
    """
    found = (page.meta(name) for name in LEAD_METAS)
    # Most descriptions are the body's first paragraph, word for word: only the others are compared
    # with spaces and case set aside, and only those the text misses make the page's whole text read.
    descriptions = [
        value
        for value in dict.fromkeys(found)
        if value and len(value.split()) >= MIN_LEAD_WORDS and value not in text and value not in body
    ]
    if not descriptions:
        return None
    read = f"{_key(text)}\n{_key(body)}"
    marked = {_key(standfirst) for standfirst in standfirsts}
    missing = [value for value in descriptions if _key(value) not in read and _key(value) not in marked]
    if not missing:
        return None
    shown = _Shown(page, body)
    return next((value for value in missing if shown.as_lead(_key(value))), None)


class _Shown:
    """The page's text as shown, read once for all of its descriptions, and where the body begins in it."""

    def __init__(self, page: Markup, body: str) -> None:
        self.page = page
        root = page.tree.body or page.main()
        self.text = _key(root.text(separator=" "))
        self.body_at = self.text.find(_key(body.split("\n", 1)[0]))
        self._linked: list[str] | None = None

    def as_lead(self, lead: str) -> bool:
        """``lead`` (a key) is shown before the body begins, and in no link's text."""
        at = self.text.find(lead)
        if at < 0 or 0 <= self.body_at < at:
            return False
        if self._linked is None:
            self._linked = [_key(linked) for linked in link_texts(self.page)]
        return not any(lead in linked for linked in self._linked)


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _area(page: Markup) -> tuple[LexborNode, bool]:
    main = page.main()
    articles = main.css("article") or page.tree.css("article")
    with_heading = [node for node in articles if node.css_first("h1") is not None]
    if with_heading:
        return with_heading[0], True
    if len(articles) == 1:
        return articles[0], True
    typed = page.tree.css_first("[itemtype*=Article], [itemtype*=BlogPosting]")
    return (typed, True) if typed is not None else (main, False)


def _published_at(page: Markup, area: LexborNode) -> datetime | None:
    published = parse_datetime(page.meta(*DATE_METAS))
    if published is not None:
        return published
    times = area.css("[itemprop=datePublished]") + area.css("time[datetime]")
    preferred = [node for node in times if {"published", "pubdate", "date"} & words(node)]
    for node in [*preferred, *times]:
        value = node.attributes.get("datetime") or node.attributes.get("content") or line(node)
        published = parse_datetime(value)
        if published is not None:
            return published
    return None


def _authors(page: Markup, area: LexborNode) -> Iterator[str]:
    for finder in (_itemprop_authors, _class_authors, _rel_authors):
        names = list(finder(area))
        if names:
            yield from names
            return
    meta = page.meta("author", "article:author", "parsely-author", "sailthru.author", "dc.creator")
    if meta and not meta.startswith(("http://", "https://")):
        yield from names_in(meta)


def _itemprop_authors(area: LexborNode) -> Iterator[str]:
    for node in area.css("[itemprop=author]"):
        name = node.css_first("[itemprop=name]")
        yield from names_in((name or node).attributes.get("content") or line(name or node))


def _class_authors(area: LexborNode) -> Iterator[str]:
    nodes = [
        node
        for node in unique(area.css(_AUTHOR_CANDIDATES))
        if AUTHOR_WORDS & words(node) and not _in_comments(node)
    ]
    for node in innermost(nodes):
        yield from names_in(line(node))


def _rel_authors(area: LexborNode) -> Iterator[str]:
    for node in area.css("a[rel~=author]"):
        yield from names_in(line(node))


def names_in(byline: str) -> Iterator[str]:
    """Author names from a byline: ``"By Ann Lee, Bo Kim and Cy Do"`` -> Ann Lee, Bo Kim, Cy Do."""
    for part in _SPLIT_NAMES.split(_BY.sub("", byline.strip())):
        name = part.strip(" .:|-\u2013")
        if name and len(name) <= MAX_AUTHOR_CHARS and not _NOT_A_NAME.search(name):
            yield name


def _in_comments(node: LexborNode) -> bool:
    return any(_COMMENT_WORDS & words(parent) for parent in ancestors(node))
