"""One raw page in, one ``page_record`` out: the extractor's single code path (service, replay, CLI).

Determinism: a record depends only on the raw page, ``schema_version``, this code (``EXTRACTOR_VERSION``)
and the pinned versions of the parsing libraries. ``extracted_at`` defaults to the raw page's
``fetched_at``, not the clock, so replaying the same page yields byte-identical record payloads;
pass ``extracted_at`` to stamp a wall-clock time instead, at the price of that guarantee.

Per page: decode the body (its charset, else a browser-style guess; bad bytes become U+FFFD), parse it
once with Lexbor for the links (:func:`extract_links`), the structured data and the markup heuristics,
decide whether the page is a product, read the main text by the engine that suits the page
(:mod:`~data_plane.extract.text.text_route`) and whether it is an article, and fill those parts, structured
data first and markup heuristics where it is silent. Non-HTML bodies give a record without links or
structured parts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of, without_credentials
from dualplane.data_plane.extract import metrics
from dualplane.data_plane.extract.article.article import extract_article
from dualplane.data_plane.extract.exceptions import ExtractError, ExtractionFailed
from dualplane.data_plane.extract.fields import ArticleFields, ProductFields
from dualplane.data_plane.extract.links import extract_links
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.plugins import Extractor, ExtractorChoice, PageView
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.source import read_source, too_deep
from dualplane.data_plane.extract.structured.page_meta import (
    canonical_url,
    description_of,
    language_of,
    title_of,
)
from dualplane.data_plane.extract.structured.structured import read_structured
from dualplane.data_plane.extract.text._trafilatura import warm_up as warm_up_shortcuts
from dualplane.data_plane.extract.text.language import detect_language
from dualplane.data_plane.extract.text.site_trust import SiteTrust, layout_of
from dualplane.data_plane.extract.text.text import clip_text, link_texts, main_text, resiliparse_text
from dualplane.data_plane.extract.text.text_route import (
    documentation_page,
    main_element,
    preformatted_page,
    text_route,
    tool_made_page,
)

EXTRACTOR_NAME = "dualplane"
EXTRACTOR_VERSION = "1.6.0"
"""1.6.0: with a ``SiteTrust`` (the extractor service, ``dualplane extract``; not replay), a page on
trafilatura's routes is read by resiliparse where its host's earlier pages showed that both read it alike.
1.5.6: a lone separator before three digits ("1.299", "12.990") is read by the currency's conventions
(none in yen or Chilean pesos, three decimals in dinars) and the page's own prices, and an element's text
beside ``itemprop=price`` is read as display text, so no price is 1,000x off the page's convention (no
field of the labelled pages changes); a block that opens with a heading naming other products ("Use it
with", "Customers also bought") is theirs, as a block classed "related" is; an instalment ("4 x 25,00 €",
"$37/mo") or a free-shipping threshold ("Free shipping on orders over $70") is no price.
1.5.5: where nothing else gives a SKU, the id the product's cart form posts is its SKU when the page
shows it to a buyer ("Product ID: VBAG" beside ``<input type="hidden" name="id" value="VBAG">``).
1.5.4: a documentation page whose main content resiliparse finds too short is read by trafilatura from its
lone article or main element, as a news page is, before the whole page (no record of the 1,949 pages of
the benchmark sets changes; on other pages one may).
1.5.3: the submit control of a form that posts one product to the cart is an add-to-cart control
whatever its label ("Buy!"), and gives a page that prints no price its stock; "72 in stock" under a
currency alone is a count, not a price.
1.5.2: a page signed by a tool in a comment before its ``<html>`` (Maven's Doxia, Javadoc 1.x) is read as
documentation, as one whose footer says so is.
1.5.1: a price labelled as the one to pay now ("Now $52.00", "jetzt 7,49 €") right after an unmarked
one is the price. 1.5.0: a page whose footer names the tool that made it, and that marks no article, is
read as documentation. 1.4.6: a struck or former-price element (``<del>``, class ``strike`` or
``old-price``) is not the price. 1.4.5: a link to ``/cart/add`` or ``?add-to-cart=ID`` is an
add-to-cart control whatever its label.
1.4.4: cents written with their mark in an element of their own ("7<span>.99</span>") are the price's;
an amount with a minus before it ("Outlet Savings: -$80.00") is a saving, not the price.
1.4.3: AngularJS's ``ng-hide`` hides a stock message; a div or span labelled only "Add to cart" (its
class or id naming the cart) is a script's add-to-cart control.
1.4.2: a page a documentation generator built takes its product from structured data only; 1.4.1: a
published "out of stock" is no statement about the product when another of its offers is in stock (a
variant sold out); 1.4.0: product fields read as on unseen shops: a price that links to another page, a
per-unit price or a quantity tier's floor is not the product's, whole and cents in elements of their own
are one price, and the id in the page's URL is its SKU when the page prints it and nothing else gives one
(1.3.1: rustdoc and Javadoc pages, and short documentation pages, are read by resiliparse; 1.3.0: a lone
element named as an article's content is read alone; 1.2.0: pages of mostly preformatted text, listings,
are read by resiliparse, not trafilatura)."""
SCHEMA_VERSIONS = (1, 2, 3)
log = logging.getLogger(__name__)
REQUIRED_FIELDS = ("url", "domain", "job_id", "trace_id", "fetched_at", "status", "body")
NOFOLLOW_RELS = frozenset({"nofollow", "ugc", "sponsored"})
MAX_LINKS = 2000
"""A record lists at most this many links (in document order), to stay within one Kafka message."""
MAX_NESTING = 5000
"""Deeper nesting of block elements is refused: parsing it takes time quadratic in the depth."""


@dataclass
class Content:
    """What the body of a page holds, before it is laid out as a record of some schema version."""

    markup: Markup | None = None
    title: str | None = None
    description: str | None = None
    text: str | None = None
    language: str | None = None
    links: list[dict[str, Any]] = field(default_factory=list)
    product: ProductFields | None = None
    article: ArticleFields | None = None
    html: str | None = None


def extract_record(
    page: Mapping[str, Any],
    *,
    schema_version: int = 1,
    extracted_at: datetime | None = None,
    extractor: Extractor | None = None,
    sites: SiteTrust | None = None,
) -> dict[str, Any]:
    """The ``page_record`` (version ``schema_version``) of ``page``, a decoded ``raw_page`` record.

    The result encodes with ``schemas.encode("page_record", record, schema_version)``. With an
    ``extractor`` plugin its output goes into ``data`` (v3; earlier versions have no place for it, only
    ``extractor_version`` names the plugin).
    :class:`ExtractionFailed` (dead-letter the page with its ``reason``) when the page lacks envelope
    fields, keeps its body behind an unresolved claim check, or breaks the extractor;
    :class:`ExtractError` for a ``schema_version`` this extractor cannot write.
    """
    if schema_version not in SCHEMA_VERSIONS:
        raise ExtractError(
            f"extractor {EXTRACTOR_VERSION} writes page_record versions {SCHEMA_VERSIONS}, "
            f"not {schema_version}; choose one of those"
        )
    _check_envelope(page)
    fetched_at = _aware(page["fetched_at"], "fetched_at", page)
    # A redirect's Location may carry credentials: they must not reach the records.
    final_url = without_credentials(str(page.get("final_url") or page["url"]))
    try:
        content = read_content(page, final_url, sites)
    except ExtractionFailed:
        raise
    except Exception as error:  # a page that crashes a parser must not stop the worker: dead-letter it
        raise ExtractionFailed(
            f"extractor {EXTRACTOR_VERSION} could not extract {final_url}: {type(error).__name__}: {error}"
        ) from error
    record = _record(
        page,
        content,
        schema_version=schema_version,
        final_url=final_url,
        fetched_at=fetched_at,
        extracted_at=extracted_at or fetched_at,
    )
    return (
        _with_plugin(record, content, extractor, schema_version)
        if schema_version >= 3 or extractor
        else record
    )


class Extraction:
    """``extract_record`` with the plugin each page's job or domain chose: what the extractor service
    and replay call (``extraction(raw_page, schema_version=N)``)."""

    def __init__(self, choice: ExtractorChoice | None = None, sites: SiteTrust | None = None) -> None:
        self.choice = choice or ExtractorChoice()
        self.sites = sites

    def __call__(self, page: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        return extract_record(page, extractor=self.choice.for_page(page), sites=self.sites, **options)


def _with_plugin(
    record: dict[str, Any], content: Content, extractor: Extractor | None, schema_version: int
) -> dict[str, Any]:
    if extractor is None:
        record |= {
            "extractor_version": f"{EXTRACTOR_NAME}/{EXTRACTOR_VERSION}",
            "extractor": None,
            "data": None,
        }
        return record
    record["extractor_version"] = extractor.label
    if schema_version >= 3:
        view = PageView(url=record["final_url"], html=content.html or "", record=record)
        record |= {"extractor": extractor.name, "data": extractor.data_of(view)}
    return record


def read_content(page: Mapping[str, Any], final_url: str, sites: SiteTrust | None = None) -> Content:
    """Decode and read the body of ``page`` (any media type) into :class:`Content` (``sites``: see
    :func:`extract_record`)."""
    headers = {str(k).lower(): str(v) for k, v in (page.get("headers") or {}).items()}
    source = read_source(bytes(page["body"]), page.get("content_type"), page.get("charset"))
    if source.replaced:
        metrics.lossy_decode(source.replaced)
        log.warning("extract: %s: %d character(s) invalid in %s became U+FFFD (charset given: %s)",
                    final_url, source.replaced, source.codec, page.get("charset"))  # fmt: skip
    if source.kind == "other":
        return Content(language=language_of(None, headers))
    if source.kind == "text":
        text = clip_text(source.text.strip()) or None
        return Content(text=text, language=language_of(None, headers) or detect_language(text))
    depth = too_deep(source.text, MAX_NESTING)
    if depth is not None:
        raise ExtractionFailed(
            f"{final_url} nests block elements {depth} deep (limit {MAX_NESTING}); its HTML is too broken "
            "to parse in reasonable time"
        )
    return _html_content(source.text, final_url, headers, sites)


def _html_content(
    html: str, final_url: str, headers: Mapping[str, str], sites: SiteTrust | None = None
) -> Content:
    # One Lexbor parse for the links, the structured data, the main element and the markup heuristics:
    # those three first, since Markup prunes the tree (scripts, which hold JSON-LD, go).
    tree = LexborHTMLParser(html)
    links = [_link(link.url, link.rel, link.nofollow, link.text) for link in extract_links(tree, final_url)]
    data = read_structured(html, final_url, tree)
    element = main_element(tree)
    generated = documentation_page(tree, html)
    markup = Markup(tree)
    docs = generated or preformatted_page(markup.tree)  # read on the pruned tree: scripts and styles are gone
    description = description_of(markup)
    # A page a documentation generator built is a product's only where its structured data says so: the
    # markup heuristics (prices, stock, buy controls) cost 2-5 ms of a 5-20 ms documentation page and found
    # no product on any of the 127 such pages of doc_sites.py's dev split. Listings keep them: a book's
    # page in plain text is one (dev's oreilly.co.jp).
    product = extract_product(markup, data, final_url, heuristics=not generated, html=html)
    # The route needs to know whether the page is a product page: the product comes first.
    shown = element if element is not None and element.shown_in(markup.tree) else None
    # A page whose footer names the tool that made it is documentation too, unless it is a product's page or
    # marks an article (checked after the product: a shop's footer may say "Built with" its platform).
    declares_article = bool(data.articles) or (data.og("og:type") or "").lower().startswith("article")
    docs = docs or (product is None and tool_made_page(markup.tree, html, declares_article=declares_article))
    route = text_route(html, shown, product_page=product is not None and not data.articles, docs=docs)
    teasers = partial(link_texts, markup)
    if sites is None or route.name in ("docs", "shop"):
        text = main_text(html, final_url, teasers, route=route)
    else:  # trafilatura's route: resiliparse where the page's host (and its layout) earned it
        text = sites.text(
            f"{_host(final_url)} {layout_of(markup.tree)}",
            full=lambda: main_text(html, final_url, teasers, route=route),
            fast=lambda: resiliparse_text(html, teasers),
        )
    article = extract_article(markup, data, text) if product is None or data.articles else None
    return Content(
        html=html,
        markup=markup,
        title=title_of(markup),
        description=description,
        text=text,
        language=language_of(markup, headers) or detect_language(text),
        links=links[:MAX_LINKS],
        product=product,
        article=article,
    )


def _host(url: str) -> str:
    """The site ``url`` is on for :class:`SiteTrust`: the crawl's politeness key (host and a port that is
    not the default, as the frontier and the throttle key a site). A URL with no usable host (a saved
    file's, "http://[x/") learns under the empty name: its page is still extracted."""
    try:
        return domain_of(url)
    except InvalidUrl:
        return ""


def warm_up() -> None:
    """Load now what the parsers otherwise load on their first pages (about 1.5 s in all).

    For processes that fork workers (replay's fork server) or must not stall their first batch:
    justext's merged stoplists (trafilatura's fallback) and the first-call set-up of lxml, extruct,
    trafilatura and the language detector. Records are unaffected: these are caches of constants.
    """
    from justext.core import define_stoplist  # noqa: PLC0415
    from trafilatura import external  # noqa: PLC0415 (a private module, touched only to warm it)

    # The merged stoplist trafilatura hands jusText (~154,000 words), and the lower-cased set jusText
    # makes of it on its first call and caches: 70 ms or more, else paid inside the first page that
    # needs jusText's rescue.
    define_stoplist(external.JT_STOPLIST or external.jt_stoplist_init())
    warm_up_shortcuts()  # and the set our calls hand jusText instead
    paragraph = "<p>Warm-up text long enough to be taken for the main content of a page.</p>"
    html = f"<html lang='en'><title>w</title><body><article>{paragraph * 8}</article></body></html>"
    page = {
        "url": "https://warm.invalid/", "domain": "warm.invalid", "job_id": "warm", "trace_id": "warm",
        "fetched_at": datetime(2000, 1, 1, tzinfo=UTC), "status": 200, "body": html.encode(),
        "content_type": "text/html", "charset": "utf-8",
    }  # fmt: skip
    extract_record(page)
    detect_language(" ".join(["warm-up words for the language model"] * 4))  # the page declares its language


def _record(
    page: Mapping[str, Any],
    content: Content,
    *,
    schema_version: int,
    final_url: str,
    fetched_at: datetime,
    extracted_at: datetime,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "url": without_credentials(str(page["url"])),
        "final_url": final_url,
        "canonical_url": canonical_url(content.markup, final_url),
        "domain": str(page["domain"]),
        "job_id": str(page["job_id"]),
        "trace_id": str(page["trace_id"]),
        "fetched_at": fetched_at,
        "extracted_at": _aware(extracted_at, "extracted_at", page),
        "extractor_version": EXTRACTOR_VERSION,
        "schema_version": schema_version,
        "status": int(page["status"]),
        "content_type": page.get("content_type"),
        "language": content.language,
        "title": content.title,
        "description": content.description,
        "text": content.text,
    }
    if schema_version >= 2:
        record["word_count"] = len(content.text.split()) if content.text else None
    record["links"] = content.links
    record["product"] = content.product.to_record(schema_version) if content.product else None
    record["article"] = content.article.to_record() if content.article else None
    return record


def _link(url: str, rel: str | None, nofollow: bool, text: str | None) -> dict[str, Any]:
    # The schema counts ugc and sponsored as nofollow too (links.py only looks at nofollow itself).
    nofollow = nofollow or bool(rel and NOFOLLOW_RELS & set(rel.split()))
    return {"url": url, "rel": rel, "nofollow": nofollow, "text": text}


def _check_envelope(page: Mapping[str, Any]) -> None:
    missing = [name for name in REQUIRED_FIELDS if page.get(name) is None]
    where = page.get("final_url") or page.get("url") or "a raw page"
    if missing:
        raise ExtractionFailed(
            f"{where} lacks raw_page field(s) {', '.join(missing)}; it cannot become a record"
        )
    if not isinstance(page["body"], bytes | bytearray | memoryview):
        raise ExtractionFailed(f"{where} has a {type(page['body']).__name__} body; raw_page bodies are bytes")
    if not page["body"] and page.get("claim_check"):
        raise ExtractionFailed(
            f"{where} keeps its body at {page['claim_check']}; fetch it from the claim-check store "
            "into the page's body before extracting"
        )


def _aware(value: Any, name: str, page: Mapping[str, Any]) -> datetime:
    """A timestamp as an aware datetime: epoch milliseconds and naive datetimes are taken as UTC."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, int) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    raise ExtractionFailed(
        f"{page.get('final_url') or page.get('url')} has {name}={value!r}; expected a datetime or epoch ms"
    )
