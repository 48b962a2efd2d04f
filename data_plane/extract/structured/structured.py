"""Structured data a page publishes about itself: JSON-LD, microdata, RDFa, OpenGraph.

Every syntax is brought to one shape, a *node*: a dict of schema.org property names (prefixes
stripped) to values, with ``@type`` a list of short type names (``["Product"]``). Nodes of the
page's subject are collected in document order, JSON-LD first; products inside lists (``ItemList``,
``isRelatedTo``…) are left out, since they describe other pages.

JSON-LD blocks and OpenGraph ``<meta>`` are read from the page's Lexbor tree, the one parse the
extractor makes anyway, as extruct reads them from its lxml tree. Microdata and RDFa need extruct's
lxml parse: microdata is read only when an ``itemscope`` element's ``itemtype`` names a product or an
article type, RDFa only when a ``typeof`` attribute names a product, an offer or an article type. Most
pages have neither, and lxml's parse plus extruct's passes were a tenth of a large page's extraction
CPU.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import extruct
import html_text
import jstyleson
from extruct.utils import parse_html
from extruct.w3cmicrodata import LxmlMicrodataExtractor
from selectolax.lexbor import LexborHTMLParser, LexborNode

log = logging.getLogger(__name__)

Node = dict[str, Any]
SOURCE_KEY = "@source"
"""Each product or article node names the syntax it was read from: ``json-ld``, ``microdata``, ``rdfa``."""

PRODUCT_TYPES = frozenset(
    {"Product", "ProductModel", "ProductGroup", "IndividualProduct", "SomeProducts", "Vehicle", "Car"}
)
ARTICLE_TYPES = frozenset(
    {
        "Article", "NewsArticle", "BlogPosting", "Report", "ScholarlyArticle", "TechArticle",
        "SocialMediaPosting", "LiveBlogPosting", "AnalysisNewsArticle", "OpinionNewsArticle",
        "ReportageNewsArticle", "ReviewNewsArticle", "BackgroundNewsArticle",
    }
)  # fmt: skip
# Properties whose values describe *other* things than the page's subject.
_ELSEWHERE = frozenset(
    {"itemListElement", "isRelatedTo", "isSimilarTo", "isAccessoryOrSparePartFor", "itemReviewed",
     "relatedLink", "significantLink", "hasPart", "isPartOf", "mentions", "about", "subjectOf"}
)  # fmt: skip
_SCHEMA_PREFIXES = ("http://schema.org/", "https://schema.org/", "schema:")
_COMMENT_LINE = re.compile(r"^\s*(//.*|<!--.*-->)", re.M)
# RDFa is parsed only where a typeof names a product, an offer or an article: most pages with typeof
# (WordPress' breadcrumbs and comments, foaf:Image) declare nothing read here, and pyRdfa was a third
# of all extraction time on the real-page set.
_RDFA_TYPES = "|".join(sorted(PRODUCT_TYPES | ARTICLE_TYPES | {"Offer", "AggregateOffer", "Offering"}))
# OpenGraph prefixes kept without a declaration, and the declaration syntax (``prefix="og: http://…"``):
# extruct's own (extruct.opengraph), so that its reading and this one agree.
OG_PREFIXES = frozenset({"og", "music", "video", "article", "book", "profile", "product"})
_PREFIX = re.compile(r"\s*(\w+):\s*([^\s]+)")
_SUBJECT_TYPES = PRODUCT_TYPES | ARTICLE_TYPES
_CLEANED_TAGS = frozenset({"script", "style", "link", "meta"})
"""Elements extruct's Cleaner (extruct.w3cmicrodata.cleaner) removes whole."""
_RDFA_SUBJECT = re.compile(rf"""typeof\s*=\s*["']?[^"'>]*\b(?:{_RDFA_TYPES})\b""")


@dataclass(frozen=True)
class Structured:
    """Products and articles a page declares, plus its OpenGraph properties (repeats kept, in order)."""

    products: tuple[Node, ...] = ()
    articles: tuple[Node, ...] = ()
    opengraph: tuple[tuple[str, str], ...] = field(default=())

    def og(self, name: str) -> str | None:
        """The first value of OpenGraph property ``name`` (``og:type``, ``product:price:amount``…)."""
        return next((value for key, value in self.opengraph if key == name and value.strip()), None)

    def og_all(self, name: str) -> list[str]:
        return [value for key, value in self.opengraph if key == name and value.strip()]


def read_structured(html: str, base_url: str, tree: LexborHTMLParser | None = None) -> Structured:
    """The structured data of ``html``; an error in one block or syntax never hides the others.

    ``tree`` is ``html`` parsed by Lexbor, not yet pruned (its scripts are read), when the caller has it.
    """
    page = tree if tree is not None else LexborHTMLParser(html)
    nodes = [("json-ld", node) for node in _json_ld(page)]
    if _microdata_subject(page, html) and (lxml_tree := _parse(html)) is not None:
        nodes += [("microdata", node) for node in _microdata(_microdata_items(lxml_tree, base_url))]
    # The plain test first: searching a large page for the pattern cost 0.7 ms, for the word 0.2.
    if "typeof" in html and _RDFA_SUBJECT.search(html):
        nodes += [("rdfa", node) for node in _rdfa(_extruct(html, "rdfa", base_url))]
    subjects = [{**node, SOURCE_KEY: syntax} for syntax, top in nodes for node in _subjects(top)]
    return Structured(
        products=tuple(node for node in subjects if PRODUCT_TYPES & set(node["@type"])),
        articles=tuple(node for node in subjects if ARTICLE_TYPES & set(node["@type"])),
        opengraph=tuple(_opengraph(page)),
    )


def types_of(node: Node) -> list[str]:
    """``@type`` as short names: ``"http://schema.org/Product"`` -> ``["Product"]``."""
    raw = node.get("@type", [])
    return [_short(str(kind)) for kind in (raw if isinstance(raw, list) else [raw])]


def _short(name: str) -> str:
    for prefix in _SCHEMA_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _subjects(node: Any) -> Iterator[Node]:
    """``node`` and the nodes nested in it, skipping properties that point at other things."""
    if isinstance(node, list):
        for item in node:
            yield from _subjects(item)
        return
    if not isinstance(node, dict):
        return
    if "@type" in node:
        yield node
    for key, value in node.items():
        if key not in _ELSEWHERE and isinstance(value, dict | list):
            yield from _subjects(value)


def _microdata_subject(tree: LexborHTMLParser, html: str) -> bool:
    """Whether the page may declare a product or an article in microdata, which only an item whose
    ``itemtype`` names one does (no other microdata reaches :class:`Structured`).

    Two in five pages with ``itemscope`` declare only breadcrumbs, a site header, an organisation...:
    they are spared lxml's parse and extruct (5 ms on a large page). extruct reads lxml's tree, not
    Lexbor's: when "itemtype" stands in the HTML where Lexbor has no such attribute (in a
    ``<template>``, a script, a ``<textarea>``...), extruct decides.
    """
    if tree.css_first("[itemscope]") is None:
        return False
    typed = tree.css("[itemtype]")
    if html.count("itemtype") != len(typed):
        return True
    for node in typed:
        attributes = node.attributes
        types = (attributes.get("itemtype") or "").split()
        if "itemscope" in attributes and any(_short(name) in _SUBJECT_TYPES for name in types):
            return True
    return False


def _parse(html: str) -> Any:
    """extruct's lxml tree of ``html``, for microdata."""
    # UTF-8 bytes parse a tenth faster than str, to the same tree (the parser is told the encoding);
    # lxml refuses a str with an XML encoding declaration, and a str with lone surrogates has no bytes.
    try:
        documents: tuple[str | bytes, ...] = (html.encode("utf-8"), html)
    except UnicodeEncodeError:
        documents = (html,)
    for document in documents:
        try:
            return parse_html(document, encoding="UTF-8")
        except Exception as error:  # lxml's ParserError, ValueError, ...: the page still has text
            log.debug("lxml could not parse a page: %r", error)
    return None


def _extruct(document: Any, syntax: str, base_url: str) -> list[Any]:
    try:
        found = extruct.extract(
            document, base_url=base_url, syntaxes=[syntax], uniform=False, errors="strict"
        )
    except Exception as error:  # extruct raises whatever its parsers raise
        log.debug("extruct %s failed on %s: %r", syntax, base_url, error)
        return []
    items = found.get(syntax, [])
    return items if isinstance(items, list) else []


class _MicrodataExtractor(LxmlMicrodataExtractor):  # type: ignore[misc]  # extruct is untyped
    """extruct's microdata, faster where a property's value is the text of an element without children.

    extruct reads such a value by deep-copying the element, cleaning the copy with lxml's Cleaner and
    converting it with html_text: a fifth of its microdata time. An element without children (no child
    elements, comments or processing instructions: ``len(node) == 0``) has nothing the Cleaner removes
    but itself when it is a killed tag (script, style, link, meta), and html_text reads its text alone
    (not its tail), so html_text on the element itself gives the same value. extruct's own output on
    every dev, test, docs and large page (benchmarks/extraction_speed.py) is unchanged.
    """

    def _extract_textContent(self, node: Any) -> Any:
        if len(node) == 0 and node.tag not in _CLEANED_TAGS:
            return html_text.etree_to_text(node)
        return super()._extract_textContent(node)


def _microdata_items(tree: Any, base_url: str) -> list[Any]:
    """``extruct.extract(tree, syntaxes=["microdata"], uniform=False)["microdata"]``, faster."""
    try:
        items = _MicrodataExtractor().extract_items(tree, base_url)
    except Exception as error:  # extruct raises whatever its parsers raise
        log.debug("extruct microdata failed on %s: %r", base_url, error)
        return []
    return items if isinstance(items, list) else []


def _json_ld(tree: LexborHTMLParser) -> Iterator[Node]:
    """Each ``<script type=application/ld+json>`` block on its own, so a broken one costs only itself."""
    for script in tree.css("script[type]"):
        if (script.attributes.get("type") or "").strip().lower().startswith("application/ld+json"):
            data = _load_json(script.text(deep=True))
            for item in data if isinstance(data, list) else [data]:
                if isinstance(item, dict):
                    yield _compact_json_ld(item)


def _load_json(text: str) -> Any:
    try:
        return json.loads(text, strict=False)
    except ValueError:
        pass
    try:  # what extruct does: JSON with comments, as some CMSs write it
        return jstyleson.loads(_COMMENT_LINE.sub("", text), strict=False)
    except Exception:  # jstyleson raises ValueError, IndexError... on text that is no JSON at all
        return None


def _compact_json_ld(value: Any) -> Any:
    if isinstance(value, list):
        return [_compact_json_ld(item) for item in value]
    if not isinstance(value, dict):
        return value
    node = {_short(key): _compact_json_ld(item) for key, item in value.items() if key != "@type"}
    if "@graph" in node:
        return node["@graph"]
    if "@type" in value:
        node["@type"] = types_of(value)
    return node


def _microdata(items: list[Any]) -> Iterator[Node]:
    for item in items:
        converted = _microdata_item(item)
        if isinstance(converted, dict):
            yield converted


def _microdata_item(value: Any) -> Any:
    if isinstance(value, list):
        return [_microdata_item(item) for item in value]
    if not isinstance(value, dict) or "properties" not in value:
        return value
    node: Node = {key: _microdata_item(item) for key, item in value["properties"].items()}
    node["@type"] = types_of({"@type": value.get("type") or []})
    return node


def _rdfa(graph: list[Any]) -> list[Node]:
    """RDFa's expanded JSON-LD graph as compact nodes; blank-node ids are random, so order by content."""
    by_id = {node.get("@id"): node for node in graph if isinstance(node, dict)}
    typed = [_rdfa_node(node, by_id, set()) for node in graph if isinstance(node, dict) and "@type" in node]
    return sorted(typed, key=lambda node: json.dumps(node, sort_keys=True, default=str))


def _rdfa_node(node: Node, by_id: dict[Any, Node], seen: set[str]) -> Node:
    seen = seen | {str(node.get("@id"))}
    compact: Node = {"@type": types_of(node)}
    for key, values in node.items():
        if key.startswith("@") or not isinstance(values, list):
            continue
        items = [_rdfa_value(value, by_id, seen) for value in values]
        compact[_short(key)] = items[0] if len(items) == 1 else items
    return compact


def _rdfa_value(value: Any, by_id: dict[Any, Node], seen: set[str]) -> Any:
    if not isinstance(value, dict):
        return value
    if "@value" in value:
        return value["@value"]
    ref = value.get("@id")
    target = by_id.get(ref)
    if target is not None and "@type" in target and str(ref) not in seen:
        return _rdfa_node(target, by_id, seen)
    return ref


def _opengraph(tree: LexborHTMLParser) -> Iterator[tuple[str, str]]:
    """OpenGraph properties as extruct reads them: ``<meta property content>`` whose prefix is an
    OpenGraph one or one the page declares (``prefix`` on ``<html>`` or ``<head>``), in document order.

    extruct reads only the ``<meta>`` its parser keeps in ``<head>``; Lexbor follows the HTML standard
    and moves those after a stray body element into ``<body>``, so all are read wherever they stand
    (12 of 1235 dev, test and docs pages gain properties, none loses any).
    """
    declared = {*_prefixes(tree.css_first("html")), *_prefixes(tree.head)}
    for meta in tree.css("meta[property][content]"):
        attributes = meta.attributes
        prop, value = attributes.get("property") or "", attributes.get("content") or ""
        prefix = prop.partition(":")[0]
        if prefix in OG_PREFIXES or prefix in declared:
            yield prop, value


def _prefixes(node: LexborNode | None) -> list[str]:
    declaration = (node.attributes.get("prefix") or "") if node is not None else ""
    return [prefix for prefix, _iri in _PREFIX.findall(declaration)]
