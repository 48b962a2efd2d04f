"""Whether a page is an article, and the article it holds: structured data first, markup to fill gaps."""

from __future__ import annotations

from dataclasses import replace

from dualplane.data_plane.extract.article.article_markup import markup_article, shown_lead, standfirsts
from dualplane.data_plane.extract.fields import ArticleFields
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.structured.schema_org import structured_article
from dualplane.data_plane.extract.structured.structured import Structured
from dualplane.data_plane.extract.text.text import article_body, clip_text

MIN_BODY_WORDS = 80
READ_BODY_SHARE = 0.5
"""The body read from the page gives way to a published ``articleBody`` only when it is shorter than this
share of it (a paywall, a script-rendered page): many sites publish a teaser there, or the body with
captions and boxes, while the main text of the page is the cleaner body (measured on the dev set)."""


def extract_article(
    page: Markup, data: Structured, text: str | None, *, heuristics: bool = True
) -> ArticleFields | None:
    """The page's article, or ``None`` when the page is not an article.

    A page is an article when its structured data declares one (or ``og:type`` article), or, with
    ``heuristics``, when an ``<article>`` element with a date or byline holds at least
    ``MIN_BODY_WORDS`` words of main text. The body is the main ``text`` without its headline,
    standfirst and byline, or the published ``articleBody`` where the page shows much less, opened by
    the lead the page shows when the main text misses it (:func:`shown_lead`). Without
    ``heuristics`` only structured data is read: the extruct-only baseline of the benchmark.
    """
    structured = structured_article(data)
    declared = bool(data.articles) or (data.og("og:type") or "").lower() == "article"
    if not heuristics:
        return structured.or_else(ArticleFields(headline=data.og("og:title"))) if declared else None
    shown = markup_article(page)
    long_enough = text is not None and len(text.split()) >= MIN_BODY_WORDS
    if not declared and not (shown.in_article_element and shown.has_date_or_byline and long_enough):
        return None
    fields = structured.or_else(shown.fields)
    marked = standfirsts(page)
    read = article_body(text, headline=fields.headline, standfirsts=marked) if text else None
    body = _chosen_body(fields.body, read)
    lead = shown_lead(page, text, body, marked) if text and body else None
    return replace(fields, body=clip_text(f"{lead}\n\n{body}") if lead else body)


def _chosen_body(published: str | None, read: str | None) -> str | None:
    """The body read from the page, unless the published ``articleBody`` holds far more (in characters)."""
    if published is None or read is None:
        return published or read
    return published if len(read) < READ_BODY_SHARE * len(published) else read
