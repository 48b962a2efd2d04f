"""The whole site as a pure function: (host, path, query) -> status, headers, body and links.

The HTTP server and the reachability explorer both call :meth:`SiteModel.resolve`, so what the
explorer predicts is what the server serves.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape
from urllib.parse import parse_qs, urlencode

from dualplane.sample_site.article_pages import render_article, render_article_listing
from dualplane.sample_site.changes import CatalogAt, with_validators
from dualplane.sample_site.content import Catalog
from dualplane.sample_site.facets import BROWSE, EVENTS, chosen_facets, month_of, render_browse, render_month
from dualplane.sample_site.js_shop import API_PREFIX, SCRIPT_PATH, SHOP_JS
from dualplane.sample_site.layout import Page
from dualplane.sample_site.product_pages import (
    listing_pages,
    product_json,
    render_product,
    render_product_listing,
)
from dualplane.sample_site.site_pages import (
    INFO_PAGES,
    PRIVATE_PAGES,
    render_home,
    render_info,
    render_not_found,
    render_private,
    robots_txt,
    sitemap_xml,
)
from dualplane.sample_site.spec import SiteSpec

HTML = "text/html"
STYLESHEET = (
    "body{font-family:system-ui,sans-serif;margin:0 auto;max-width:72rem}\n.cookie-consent{position:fixed}\n"
)
_IMAGE_PATH = re.compile(r"/images/[a-z0-9-]+\.png")


def _tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xc8\xd2\xdc")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


PNG = _tiny_png()


@dataclass(frozen=True)
class Response:
    """What a host answers. ``links`` are the absolute, unfragmented targets of the page's ``<a href>``."""

    status: int
    body: bytes
    content_type: str = HTML
    headers: Mapping[str, str] = field(default_factory=dict)
    links: tuple[str, ...] = ()

    @property
    def location(self) -> str | None:
        return self.headers.get("Location")


class SiteModel:
    """Every page of a site, rendered on demand from its spec (which needs a known ``base_port``)."""

    def __init__(self, spec: SiteSpec, catalog: Catalog | None = None) -> None:
        spec.origin(0)  # fails early, and clearly, when the ports are not known yet
        self.spec = spec
        self.catalog = catalog or Catalog(spec)

    def resolve(self, host: int, path: str, query: str = "", step: int = 0) -> Response:
        """Answer ``GET path?query`` on host ``host`` (0-based) at time step ``step``.

        ``step`` counts only on a site whose spec has ``changes``: its products are then as they
        stand at that step, and a 200 carries ``ETag`` and ``Last-Modified``.
        """
        changes = self.spec.changes
        if changes is None:
            return self._route(host, path, query)
        catalog = CatalogAt(self.spec, changes, step)
        response = SiteModel(self.spec, catalog)._route(host, path, query)
        if response.status != 200:
            return response
        modified = changes.modified_at(catalog.latest_change)
        headers = with_validators(response.headers, response.body, modified)
        return Response(response.status, response.body, response.content_type, headers, response.links)

    def _route(self, host: int, path: str, query: str) -> Response:
        for route in (self._redirect, self._file, self._page, self._trap):
            response = route(host, path, query)
            if response is not None:
                return response
        return self.not_found(host, path)

    def not_found(self, host: int, path: str) -> Response:
        return self._html(host, path, render_not_found, status=404)

    def _redirect(self, host: int, path: str, query: str) -> Response | None:
        # /old/... moved permanently; /old/shop -> /shop -> /products?page=1 is a chain of two.
        if path.startswith("/old/"):
            return _redirect(301, path[len("/old") :] + (f"?{query}" if query else ""))
        origin = self.spec.origin(host)
        if path == "/shop" and self.catalog.product_count(host):
            return _redirect(301, f"{origin}/products?page=1")
        if path == "/news" and self.catalog.article_count(host):
            return _redirect(301, f"{origin}/articles?page=1")
        if path == "/latest" and self.catalog.article_count(host):
            return _redirect(302, self.catalog.article(host, 0).path)
        return None

    def _file(self, host: int, path: str, query: str) -> Response | None:
        if path == "/robots.txt":
            return Response(200, robots_txt(self.spec, host).encode(), "text/plain")
        if path == "/sitemap.xml":
            return Response(200, sitemap_xml(self.catalog, host).encode(), "application/xml")
        if path == "/static/site.css":
            return Response(200, STYLESHEET.encode(), "text/css")
        if _IMAGE_PATH.fullmatch(path):
            return Response(200, PNG, "image/png")
        if host in self.spec.js_hosts:
            return self._script_file(host, path)
        return None

    def _script_file(self, host: int, path: str) -> Response | None:
        if path == SCRIPT_PATH:
            return Response(200, SHOP_JS.encode(), "text/javascript")
        if path.startswith(API_PREFIX):
            item = product_json(self.catalog, host, path)
            return None if item is None else Response(200, item, "application/json")
        return None

    def _page(self, host: int, path: str, query: str) -> Response | None:
        if path == "/":
            return self._html(host, path, render_home)
        if path in ("/products", "/articles"):
            return self._listing(host, path, query)
        if path.startswith(("/product/", "/article/")):
            return self._item(host, path)
        if path in INFO_PAGES:
            return self._html(host, path, lambda page: render_info(page, INFO_PAGES[path]))
        if path in PRIVATE_PAGES:
            return self._html(host, path, lambda page: render_private(page, PRIVATE_PAGES[path]))
        return None

    def _trap(self, host: int, path: str, query: str) -> Response | None:
        if host not in self.spec.faceted_hosts:
            return None
        month = month_of(path) if path.startswith(EVENTS) else None
        if month is not None:
            return self._html(host, path, lambda page: render_month(page, month))
        if path.startswith(BROWSE) and path[len(BROWSE) :].replace("all/", "") == "":
            return self._html(host, path, render_browse)
        return None

    def _listing(self, host: int, path: str, query: str) -> Response:
        is_products = path == "/products"
        count = self.catalog.product_count(host) if is_products else self.catalog.article_count(host)
        number_text = parse_qs(query).get("page", ["1"])[0]
        number = int(number_text) if number_text.isdecimal() else 0
        if not count or not 1 <= number <= listing_pages(count):
            return self.not_found(host, path)
        render = render_product_listing if is_products else render_article_listing
        chosen = chosen_facets(query) if is_products and host in self.spec.faceted_hosts else {}
        if chosen is None:
            return self.not_found(host, path)
        here = f"{path}?{urlencode({'page': number, **chosen})}"
        return self._html(host, here, lambda page: render(page, number))

    def _item(self, host: int, path: str) -> Response:
        kind, _, slug = path[1:].partition("/")
        if kind == "product":
            product = self.catalog.product_by_slug(host, slug)
            if product is not None:
                return self._html(host, path, lambda page: render_product(page, product))
        else:
            article = self.catalog.article_by_slug(host, slug)
            if article is not None:
                return self._html(host, path, lambda page: render_article(page, article))
        return self.not_found(host, path)

    def _html(self, host: int, path: str, render: Callable[[Page], str], status: int = 200) -> Response:
        page = Page(self.spec, self.catalog, host, path)
        body = render(page).encode()
        return Response(status, body, HTML, links=tuple(dict.fromkeys(page.links)))


def _redirect(status: int, location: str) -> Response:
    body = f'<html><body>Moved: <a href="{escape(location)}">{escape(location)}</a></body></html>'.encode()
    return Response(status, body, HTML, headers={"Location": location})
