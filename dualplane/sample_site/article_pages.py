"""News pages: paginated article listings and article pages, half with NewsArticle JSON-LD.

Articles without JSON-LD carry their metadata only in markup: a ``<time datetime>`` and a byline.
"""

from __future__ import annotations

from html import escape
from typing import Any

from dualplane.sample_site.content import Article
from dualplane.sample_site.layout import Head, Page, document, json_ld, site_name
from dualplane.sample_site.product_pages import PAGE_SIZE, listing_pages, listing_window, pagination


def byline(article: Article) -> str:
    names = [f'<span class="author">{escape(name)}</span>' for name in article.authors]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f'<p class="byline">By {joined}</p>'


def display_date(article: Article) -> str:
    """``March 5, 2024 at 08:30 UTC``, as a reader sees it."""
    when = article.published_at
    return f"{when:%B} {when.day}, {when.year} at {when:%H:%M} UTC"


def article_teaser(page: Page, article: Article) -> str:
    return (
        '<li class="teaser">'
        f'<span class="section">{escape(article.section)}</span> '
        f"<h3>{page.a(article.path, article.headline)}</h3>"
        f'<time datetime="{article.published_at.isoformat()}">{display_date(article)}</time>'
        f'<p class="standfirst">{escape(article.standfirst)}</p>'
        "</li>"
    )


def render_article_listing(page: Page, number: int) -> str:
    count = page.catalog.article_count(page.host)
    last = listing_pages(count)
    articles = [page.catalog.article(page.host, index) for index in listing_window(count, number)]
    teasers = "\n".join(article_teaser(page, article) for article in articles)
    main = (
        f"<h1>Latest stories <small>page {number} of {last}</small></h1>\n"
        f'<ul class="teasers">\n{teasers}\n</ul>\n{pagination(page, number, last)}'
    )
    return document(
        page, Head(f"Latest stories - page {number}", f"News and features from {page.name}."), main
    )


def render_article(page: Page, article: Article) -> str:
    """The article page; JSON-LD NewsArticle only when ``article.markup`` is ``json-ld``."""
    listing, published = article.index // PAGE_SIZE + 1, article.published_at.isoformat()
    crumbs = [page.a("/", "Home"), page.a(f"/articles?page={listing}", article.section)]
    main = "\n".join(
        [
            f'<nav class="breadcrumbs" aria-label="Breadcrumb">{" &rsaquo; ".join(crumbs)}</nav>',
            '<article class="post">',
            f'<header><p class="kicker">{escape(article.section)}</p>',
            f'<h1 class="headline">{escape(article.headline)}</h1>',
            f'<p class="standfirst">{escape(article.standfirst)}</p>',
            byline(article),
            f'<time class="published" datetime="{published}">{display_date(article)}</time>',
            "</header>",
            f'<figure><img src="{article.image_path}" alt="" width="960" height="540">'
            "<figcaption>Photo: staff photographer</figcaption></figure>",
            _body(page, article),
            "</article>",
            _most_read(page, article),
        ]
    )
    head = Head(
        article.headline,
        article.standfirst,
        og_type="article",
        image_path=article.image_path,
        extra=_structured_data(page, article) if article.markup == "json-ld" else "",
    )
    return document(page, head, main)


def _body(page: Page, article: Article) -> str:
    html = ['<div class="article-body">']
    for position, paragraph in enumerate(article.paragraphs):
        html.append(f"<p>{escape(paragraph)}</p>")
        if position == 1:
            html.append('<div class="ad-slot" aria-hidden="true">Advertisement</div>')
    html.append("</div>")
    partner = page.catalog.partner_product(page.host, article.index)
    if partner is not None:
        target = page.spec.origin(partner.host) + partner.path
        shop = escape(site_name(page.spec, partner.host))
        html.append(
            f'<aside class="shop-the-story">Shop the story: {page.a(target, partner.name)} at {shop}</aside>'
        )
    if article.index % 8 == 5:  # a broken link: the follow-up was announced but never published
        html.append(f'<p class="update">{page.a(f"{article.path}-update", "Read the follow-up")}</p>')
    return "\n".join(html)


def _most_read(page: Page, article: Article) -> str:
    count = page.catalog.article_count(page.host)
    indexes = dict.fromkeys((article.index + step) % count for step in (1, 2, 5, 11, 17))
    indexes.pop(article.index, None)
    items = []
    for position, index in enumerate(indexes):
        other = page.catalog.article(page.host, index)
        # Links copied from the old CMS still use /old/... and are redirected.
        path = f"/old{other.path}" if position == 0 and article.index % 9 == 4 else other.path
        items.append(f"<li>{page.a(path, other.headline)}</li>")
    return f'<aside class="most-read"><h2>Most read</h2><ol>{"".join(items)}</ol></aside>'


def _structured_data(page: Page, article: Article) -> str:
    data: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": article.headline,
        "image": [page.absolute(article.image_path)],
        "datePublished": article.published_at.isoformat(),
        "dateModified": article.published_at.isoformat(),
        "articleSection": article.section,
        "author": [{"@type": "Person", "name": name} for name in article.authors],
        "publisher": {"@type": "Organization", "name": page.name},
        "mainEntityOfPage": {"@type": "WebPage", "@id": page.url},
    }
    return json_ld(data)
