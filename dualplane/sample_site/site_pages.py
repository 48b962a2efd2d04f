"""Everything but products and articles: home, information and account pages, robots.txt,
sitemap.xml, the not-found page and the anti-bot challenge page.
"""

from __future__ import annotations

from html import escape
from xml.sax.saxutils import escape as xml_escape

from dualplane.sample_site.article_pages import article_teaser
from dualplane.sample_site.changes import CatalogAt
from dualplane.sample_site.content import Catalog, Dice, sentences
from dualplane.sample_site.layout import Head, Page, document, json_ld
from dualplane.sample_site.product_pages import listing_pages, product_card
from dualplane.sample_site.spec import SiteSpec

DISALLOWED_PREFIX = "/private/"
INFO_PAGES = {"/about": "About us", "/contact": "Contact", "/privacy": "Privacy policy"}
PRIVATE_PAGES = {
    "/private/account": "My account",
    "/private/orders": "My orders",
    "/private/wishlist": "Wishlist",
}
FEATURED = 8


def render_home(page: Page) -> str:
    sections = [f'<section class="hero"><h1>Welcome to {escape(page.name)}</h1></section>']
    products, articles = page.catalog.product_count(page.host), page.catalog.article_count(page.host)
    if products:
        shown = range(min(FEATURED, products))
        cards = "\n".join(product_card(page, page.catalog.product(page.host, i)) for i in shown)
        more = [
            page.a("/products?page=1", "Browse all products"),
            page.a("/old/shop", "Spring sale"),  # a chain of two redirects
            page.a("/product/discontinued-0", "Last season's bestseller"),  # 404
        ]
        sections.append(
            '<section class="featured"><h2>Featured products</h2>\n'
            f'<ul class="product-grid">\n{cards}\n</ul>\n<p>{" · ".join(more)}</p></section>'
        )
    if articles:
        shown = range(min(FEATURED, articles))
        teasers = "\n".join(article_teaser(page, page.catalog.article(page.host, i)) for i in shown)
        more = [
            page.a("/articles?page=1", "All stories"),
            page.a("/old/news", "From the archive"),
            page.a("/latest", "Breaking"),  # 302 to the newest article
        ]
        sections.append(
            '<section class="latest"><h2>Latest stories</h2>\n'
            f'<ul class="teasers">\n{teasers}\n</ul>\n<p>{" · ".join(more)}</p></section>'
        )
    organization = {
        "@context": "https://schema.org",
        "@type": "Organization",
        "name": page.name,
        "url": page.url,
    }
    head = Head(page.name, f"{page.name}: products, stories and more.", extra=json_ld(organization))
    return document(page, head, "\n".join(sections))


def render_info(page: Page, title: str) -> str:
    dice = Dice(f"dualplane-sample:{page.spec.seed}:{page.host}:info:{page.path}")
    paragraphs = "\n".join(f"<p>{escape(sentences(dice, 4))}</p>" for _ in range(3))
    return document(page, Head(title, f"{title} - {page.name}"), f"<h1>{escape(title)}</h1>\n{paragraphs}")


def render_private(page: Page, title: str) -> str:
    """Account pages: robots.txt disallows them, and they link only among themselves."""
    links = " · ".join(page.a(path, name) for path, name in PRIVATE_PAGES.items() if path != page.path)
    main = f"<h1>{escape(title)}</h1>\n<p>Please sign in to see your account.</p>\n<p>{links}</p>"
    return document(page, Head(title, "Customer account"), main)


def render_not_found(page: Page) -> str:
    home = page.a("/", "Go to the home page")
    main = f"<h1>Page not found</h1>\n<p>We could not find {escape(page.path)}. {home}.</p>"
    return document(page, Head("Page not found", "This page does not exist."), main)


def robots_txt(spec: SiteSpec, host: int) -> str:
    crawl_delay = f"Crawl-delay: {spec.crawl_delay_s:g}\n" if spec.crawl_delay_s else ""
    return (
        "# Sample site: be polite.\n"
        "User-agent: BadBot\n"
        "Disallow: /\n\n"
        "User-agent: *\n"
        f"Disallow: {DISALLOWED_PREFIX}\n"
        "Allow: /\n"
        f"{crawl_delay}\n"
        f"Sitemap: {spec.origin(host)}/sitemap.xml\n"
    )


def sitemap_paths(catalog: Catalog, host: int) -> list[tuple[str, str | None]]:
    """``(path, lastmod)`` of every page a crawler is meant to find on ``host``."""
    paths: list[tuple[str, str | None]] = [("/", None)]
    products, articles = catalog.product_count(host), catalog.article_count(host)
    if products:
        paths += [(f"/products?page={n}", None) for n in range(1, listing_pages(products) + 1)]
        paths += [(catalog.product(host, i).path, _lastmod(catalog, host, i)) for i in range(products)]
    if articles:
        paths += [(f"/articles?page={n}", None) for n in range(1, listing_pages(articles) + 1)]
        for index in range(articles):
            article = catalog.article(host, index)
            paths.append((article.path, article.published_at.date().isoformat()))
    paths += [(path, None) for path in INFO_PAGES]
    return paths


def _lastmod(catalog: Catalog, host: int, index: int) -> str | None:
    """When product ``index`` last changed, on a site that changes (W3C datetime, to the second)."""
    return catalog.modified_at(host, index).isoformat() if isinstance(catalog, CatalogAt) else None


def sitemap_xml(catalog: Catalog, host: int) -> str:
    origin = catalog.spec.origin(host)
    entries = []
    for path, lastmod in sitemap_paths(catalog, host):
        modified = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
        entries.append(f"<url><loc>{xml_escape(origin + path)}</loc>{modified}</url>")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "\n".join(entries)
        + "\n</urlset>\n"
    )


def challenge_page() -> str:
    """A tiny bot-challenge interstitial of the kind CDNs serve with status 200."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Just a moment...</title>'
        '<meta name="robots" content="noindex,nofollow"></head><body>'
        '<div id="cf-challenge-running" class="cf-challenge"><h1>Verify you are human</h1>'
        "<p>Checking your browser before accessing this site.</p>"
        '<div class="g-recaptcha" data-sitekey="6LdSampleSiteKey000000000000000000000000"></div>'
        "<noscript>Enable JavaScript and cookies to continue.</noscript></div></body></html>"
    )
