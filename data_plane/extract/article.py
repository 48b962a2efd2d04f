"""Whether a page is an article, and the article it holds: structured data first, markup to fill gaps."""

from __future__ import annotations

from data_plane.extract.article_markup import markup_article
from data_plane.extract.fields import ArticleFields
from data_plane.extract.markup import Markup
from data_plane.extract.schema_org import structured_article
from data_plane.extract.structured import Structured
from data_plane.extract.text import article_body

MIN_BODY_WORDS = 80


def extract_article(
    page: Markup, data: Structured, text: str | None, description: str | None, *, heuristics: bool = True
) -> ArticleFields | None:
    """The page's article, or ``None`` when the page is not an article.

    A page is an article when its structured data declares one (or ``og:type`` article), or, with
    ``heuristics``, when an ``<article>`` element with a date or byline holds at least
    ``MIN_BODY_WORDS`` words of main text. The body is ``articleBody`` when published, else the main
    ``text`` without its headline, standfirst and byline. Without ``heuristics`` only structured data
    is read: the extruct-only baseline of the benchmark.
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
    if fields.body is None and text is not None:
        body = article_body(text, headline=fields.headline, description=description)
        fields = fields.or_else(ArticleFields(body=body))
    return fields
