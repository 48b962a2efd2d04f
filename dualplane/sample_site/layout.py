"""The page skeleton every HTML page shares: head with OpenGraph, cookie banner, nav, footer.

Pages are rendered through a :class:`Page`, which remembers every ``<a href>`` it writes, so the
link graph used for reachability is exactly the one a crawler parses out of the HTML.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from html import escape
from typing import Any
from urllib.parse import urldefrag, urljoin

from dualplane.sample_site import words
from dualplane.sample_site.content import Catalog
from dualplane.sample_site.spec import SiteSpec

CURRENCY_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£"}


def site_name(spec: SiteSpec, host: int) -> str:
    """The brand of host ``host``; distinct for up to five hosts of each kind."""
    names = {"shop": words.SHOP_NAMES, "news": words.NEWS_NAMES, "mixed": words.MIXED_NAMES}[spec.kind(host)]
    return names[(spec.seed + host // 3) % len(names)]


def format_price(amount: Decimal, currency: str, comma_decimals: bool = False) -> str:
    """``€1,299.00``, ``$24.99``; with ``comma_decimals`` (euro only) ``1.299,00 €``."""
    text = f"{amount:,.2f}"
    if comma_decimals and currency == "EUR":
        return text.replace(",", " ").replace(".", ",").replace(" ", ".") + "\u00a0€"
    return f"{CURRENCY_SYMBOLS[currency]}{text}"


def json_ld(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, indent=2).replace("</", "<\\/")
    return f'<script type="application/ld+json">\n{text}\n</script>'


@dataclass
class Page:
    """Rendering context of one page: where it lives and the links written so far."""

    spec: SiteSpec
    catalog: Catalog
    host: int
    path: str
    links: list[str] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return self.spec.origin(self.host)

    @property
    def url(self) -> str:
        return self.origin + self.path

    @property
    def name(self) -> str:
        return site_name(self.spec, self.host)

    def resolve(self, target: str) -> str:
        """``urldefrag(urljoin(self.url, target)).url``, with fast paths for the forms pages use."""
        if target.startswith("/") and not target.startswith("//") and "#" not in target:
            return self.origin + target
        if target.startswith("http://") and "#" not in target:
            return target
        return urldefrag(urljoin(self.url, target)).url

    def absolute(self, path: str) -> str:
        return self.origin + path

    def a(self, target: str, text: str, css: str = "", rel: str = "") -> str:
        """An ``<a>`` element (``text`` is escaped here); the link is recorded, resolved and unfragmented."""
        self.links.append(self.resolve(target))
        attrs = f' class="{css}"' if css else ""
        attrs += f' rel="{rel}"' if rel else ""
        return f'<a href="{escape(target)}"{attrs}>{escape(text)}</a>'


@dataclass(frozen=True)
class Head:
    """What a page says about itself in ``<head>``."""

    title: str
    description: str
    og_type: str = "website"
    image_path: str | None = None
    extra: str = ""


def document(page: Page, head: Head, main: str) -> str:
    """The whole HTML document around ``main``."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            _head(page, head),
            '<body id="top">',
            _cookie_banner(page),
            _header(page),
            f'<main id="content">\n{main}\n</main>',
            _footer(page),
            _analytics(),
            "</body>",
            "</html>",
            "",
        ]
    )


def _head(page: Page, head: Head) -> str:
    title = escape(f"{head.title} | {page.name}")
    meta = [
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title>",
        f'<meta name="description" content="{escape(head.description)}">',
        f'<link rel="canonical" href="{escape(page.url)}">',
        f'<meta property="og:site_name" content="{escape(page.name)}">',
        f'<meta property="og:type" content="{head.og_type}">',
        f'<meta property="og:title" content="{escape(head.title)}">',
        f'<meta property="og:description" content="{escape(head.description)}">',
        f'<meta property="og:url" content="{escape(page.url)}">',
    ]
    if head.image_path:
        meta.append(f'<meta property="og:image" content="{escape(page.absolute(head.image_path))}">')
    meta += [
        '<meta name="twitter:card" content="summary_large_image">',
        '<link rel="stylesheet" href="/static/site.css">',
        '<link rel="icon" href="/favicon.ico">',
    ]
    if head.extra:
        meta.append(head.extra)
    return "<head>\n" + "\n".join(meta) + "\n</head>"


def _cookie_banner(page: Page) -> str:
    return (
        '<div id="cookie-banner" class="cookie-consent" role="dialog" aria-label="Cookie consent">\n'
        "<p>We use cookies to remember your basket, measure traffic and show you relevant offers. "
        f"Read our {page.a('/privacy', 'privacy policy')} to learn more.</p>\n"
        '<button type="button" class="btn accept">Accept all</button> '
        '<button type="button" class="btn reject">Only necessary</button>\n'
        "</div>"
    )


def _header(page: Page) -> str:
    nav = [page.a("/", "Home")]
    if page.catalog.product_count(page.host):
        nav.append(page.a("/products?page=1", "Shop"))
    if page.catalog.article_count(page.host):
        nav.append(page.a("/articles?page=1", "Stories"))
    nav += [page.a("/about", "About"), page.a("/private/account", "My account")]
    items = "\n".join(f"<li>{link}</li>" for link in nav)
    return (
        '<header class="site-header">\n'
        f"{page.a('/', page.name, css='logo')}\n"
        f'<nav class="main-nav" aria-label="Main">\n<ul>\n{items}\n</ul>\n</nav>\n'
        '<form class="search" action="/search" method="get" role="search">'
        '<input type="search" name="q" placeholder="Search"><button type="submit">Search</button></form>\n'
        "</header>"
    )


def _footer(page: Page) -> str:
    company = [page.a("/about", "About us"), page.a("/contact", "Contact")]
    company += [page.a("/privacy", "Privacy"), page.a("/careers", "Careers")]
    network = [
        page.a(page.spec.origin(other) + "/", site_name(page.spec, other))
        for other in range(page.spec.hosts)
        if other != page.host
    ]
    columns = [("Company", company)] + ([("Our network", network)] if network else [])
    html = ['<footer class="site-footer">']
    for title, links in columns:
        items = "".join(f"<li>{link}</li>" for link in links)
        html.append(f'<div class="footer-col"><h4>{title}</h4><ul>{items}</ul></div>')
    legal = f"© 2024 {escape(page.name)} · All rights reserved · {page.a('#top', 'Back to top')}"
    html.append(f'<p class="legal">{legal}</p>')
    html.append("</footer>")
    return "\n".join(html)


def _analytics() -> str:
    return (
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments);}"
        "gtag('js',new Date());gtag('config','G-SAMPLE0000');</script>"
    )
