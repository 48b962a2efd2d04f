"""One parse serves many readers: structured data from the Lexbor tree, documentation text by resiliparse."""

from __future__ import annotations

from typing import Any

import pytest
from selectolax.lexbor import LexborHTMLParser

from dualplane.data_plane.extract.article.article_markup import markup_article
from dualplane.data_plane.extract.markup import Markup, unique
from dualplane.data_plane.extract.structured import structured
from dualplane.data_plane.extract.structured.structured import read_structured
from dualplane.data_plane.extract.text import text
from dualplane.data_plane.extract.text.text import DOCS_MIN_CHARS, main_text

pytestmark = pytest.mark.unit

URL = "https://docs.example/reference/arrays.html"
PARAGRAPH = (
    "<p>An array object represents a multidimensional, homogeneous array of fixed-size items. An "
    "associated data-type object describes the format of each element in the array.</p>"
)


def sphinx_page(body: str) -> str:
    """A page as Sphinx themes write it: the script every theme loads, a sidebar, the article."""
    return f"""<!DOCTYPE html><html lang="en"><head><title>Arrays - Docs</title>
<script src="_static/documentation_options.js"></script></head><body>
<nav class="bd-sidebar"><ul><li><a href="a.html">Array objects</a></li><li><a href="b.html">Scalars</a></li>
<li><a href="c.html">Data type objects</a></li></ul></nav>
<main><article class="bd-article"><h1>Array objects</h1>{body}</article></main>
<footer><p>Copyright 2005-2026, The Docs Developers.</p></footer></body></html>"""


def _no_trafilatura(*_args: Any, **_kwargs: Any) -> str:
    raise AssertionError("trafilatura read a documentation page")


def test_a_documentation_page_is_read_by_resiliparse_without_its_sidebar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(text.trafilatura, "extract", _no_trafilatura)
    found = main_text(sphinx_page(PARAGRAPH * 20), URL)
    assert found is not None and found.count("An array object represents") == 20
    assert "Data type objects" not in found and "Scalars" not in found


def test_a_short_documentation_page_is_read_by_resiliparse(monkeypatch: pytest.MonkeyPatch) -> None:
    # Less than DOCS_MIN_CHARS, but the main content is most of the page's text (a small class page).
    monkeypatch.setattr(text.trafilatura, "extract", _no_trafilatura)
    assert len(PARAGRAPH) < DOCS_MIN_CHARS
    found = main_text(sphinx_page(PARAGRAPH), URL)
    assert found is not None and "An array object represents" in found and "Scalars" not in found


def test_a_documentation_page_whose_main_content_holds_little_of_its_text_goes_to_trafilatura(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An index of links: resiliparse's main content takes it for navigation and keeps the heading only.
    asked: list[str] = []
    monkeypatch.setattr(
        text.trafilatura, "extract", lambda html, **_options: asked.append(html) or "from trafilatura"
    )
    links = "".join(f'<li><a href="f{n}.html">function_{n}()</a> : module_{n}.h</li>' for n in range(60))
    page = sphinx_page(f"<ul>{links}</ul>")
    assert main_text(page, URL) == "from trafilatura"
    assert asked == [page]


def test_a_news_page_is_read_by_trafilatura(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(
        text.trafilatura, "extract", lambda html, **_options: asked.append(html) or "from trafilatura"
    )
    page = f"<html><head><title>News</title></head><body><article>{PARAGRAPH * 20}</article></body></html>"
    assert main_text(page, URL) == "from trafilatura"
    assert asked == [page]


def test_json_ld_and_opengraph_come_from_the_lexbor_tree_without_an_lxml_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        structured, "_parse", lambda html: pytest.fail("lxml parsed a page without microdata")
    )
    html = """<html><head><meta property="og:type" content="article">
<script type="application/ld+json">{"@type": "NewsArticle", "headline": "Rates rise"}</script>
</head><body><p>Text</p></body></html>"""
    data = read_structured(html, URL, LexborHTMLParser(html))
    assert [node["headline"] for node in data.articles] == ["Rates rise"]
    assert data.og("og:type") == "article"


def test_opengraph_after_a_stray_body_element_in_the_head_is_still_read() -> None:
    # Lexbor moves everything after the <div> into <body>, as the HTML standard says; the page meant it.
    html = """<html><head><title>t</title><div>ad</div><meta property="og:title" content="The title">
<meta property="fb:app_id" content="1"><meta property="article:section" content="Sport"></head>
<body><p>Text</p></body></html>"""
    assert read_structured(html, URL).opengraph == (("og:title", "The title"), ("article:section", "Sport"))


def test_opengraph_prefixes_the_page_declares_are_read() -> None:
    html = """<html prefix="fb: http://ogp.me/ns/fb#"><head><meta property="fb:app_id" content="1">
<meta property="twitter:card" content="summary"></head><body></body></html>"""
    assert read_structured(html, URL).opengraph == (("fb:app_id", "1"),)


def test_microdata_is_still_read_with_lxml_where_the_page_has_itemscope() -> None:
    html = """<html><body><div itemscope itemtype="https://schema.org/Product">
<span itemprop="name">Blue Mug</span><span itemprop="sku">BM-1</span></div></body></html>"""
    products = read_structured(html, URL).products
    assert [(node["name"], node["sku"], node["@source"]) for node in products] == [
        ("Blue Mug", "BM-1", "microdata")
    ]


def test_a_node_matching_two_selectors_of_a_list_is_listed_once() -> None:
    tree = LexborHTMLParser('<p id="byline" class="byline-author">Ann</p><p class="author">Bo</p>')
    listed = tree.css("[class*=author i], [id*=byline i], [class*=byline i]")
    assert len(listed) > 2  # Lexbor repeats it: the reason for unique()
    assert [node.text() for node in unique(listed)] == ["Ann", "Bo"]


def test_a_former_price_matched_by_several_hints_is_removed_once() -> None:
    html = '<div><span class="old-price was-price strike" id="listprice">€9</span><p>€5</p></div>' * 3
    assert Markup(html).tree.body is not None
    assert "€9" not in (Markup(html).tree.body.text() or "")


@pytest.mark.parametrize("attribute", ['class="by-line"', 'id="post_author"', 'class="entry-contributor"'])
def test_authors_are_found_by_any_class_or_id_that_names_them(attribute: str) -> None:
    html = f"""<html><body><article><h1>Rates rise</h1><time datetime="2024-05-01">1 May</time>
<p {attribute}>By Ann Lee</p><p>{PARAGRAPH}</p></article></body></html>"""
    assert markup_article(Markup(html)).fields.authors == ("Ann Lee",)


def test_a_documentation_index_is_read_from_its_main_element_without_trafilatura(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(text.trafilatura, "extract", _no_trafilatura)
    entries = "".join(
        f'<li><a href="r.html#f{n}">frobnicate_{n}() (in module numpy)</a></li>' for n in range(80)
    )
    found = main_text(sphinx_page(f"<ul>{entries}</ul>"), URL)
    assert found is not None and "frobnicate_79() (in module numpy)" in found
    assert "Data type objects" not in found
