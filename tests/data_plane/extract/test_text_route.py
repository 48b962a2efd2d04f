"""Which engine reads a page's main text: documentation and shop pages by resiliparse, a lone article or
main element by trafilatura alone, every other page by trafilatura whole."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from selectolax.lexbor import LexborHTMLParser

from dualplane.data_plane.extract import text
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record
from dualplane.data_plane.extract.text import main_text
from dualplane.data_plane.extract.text_route import (
    CONTENT_ELEMENTS,
    MIN_ELEMENT_WORDS,
    TextRoute,
    documentation_page,
    main_element,
    preformatted_page,
    text_route,
)

pytestmark = pytest.mark.unit

URL = "https://news.example/story"
PARAGRAPH = "<p>" + "The council voted on the new budget for the harbour and its bridges. " * 3 + "</p>"
SPHINX = '<html><head><script src="_static/documentation_options.js"></script></head><body></body></html>'


def news_page(body: str) -> str:
    return f"<html><head><title>Story</title></head><body><nav><a href='/'>Home</a></nav>{body}</body></html>"


def route_of(html: str, *, product_page: bool = False) -> TextRoute:
    return text_route(html, main_element(LexborHTMLParser(html)), product_page=product_page)


def test_a_documentation_page_goes_to_resiliparse_even_when_it_sells_something() -> None:
    assert route_of(SPHINX, product_page=True).name == "docs"


@pytest.mark.parametrize(
    ("head", "docs"),
    [
        ('<script src="_static/documentation_options.js?v=5929fcd5"></script>', True),
        ('<script id="documentation_options" src="../_static/DOCUMENTATION_OPTIONS.JS"></script>', True),
        ('<meta name="generator" content="Docutils 0.17.1: http://docutils.sourceforge.net/">', True),
        ('<meta content="mkdocs-1.5.3, mkdocs-material-9.4.6" name="Generator">', True),
        ('<meta name="generator" content="Docusaurus v3.1.0">', True),
        ('<meta name="generator" content="WordPress 6.4.2">', False),
        ('<meta name="description" content="Sphinx documentation of the harbour">', False),
        ("<!-- built without documentation_options.js -->", False),
    ],
)
def test_a_documentation_page_is_told_by_its_parsed_tree(head: str, docs: bool) -> None:
    html = f"<html><head>{head}</head><body><p>Text</p></body></html>"
    found = documentation_page(LexborHTMLParser(html))
    assert found is docs
    assert text_route(html, docs=found).name == ("docs" if docs else "page")


def test_a_product_page_goes_to_resiliparse() -> None:
    assert route_of(news_page(f"<article>{PARAGRAPH * 10}</article>"), product_page=True).name == "shop"


def test_a_lone_article_element_is_handed_to_trafilatura_alone() -> None:
    route = route_of(news_page(f"<div><article><h1>Budget</h1>{PARAGRAPH * 10}</article></div>"))
    assert route.name == "element"
    assert route.element is not None
    assert "Budget" in route.element.html and "Home" not in route.element.html


def test_nested_article_elements_count_once_by_the_outermost() -> None:
    body = (
        f'<article><div itemprop="articleBody">{PARAGRAPH * 10}</div><article>{PARAGRAPH}</article></article>'
    )
    assert route_of(news_page(body)).name == "element"


def test_without_a_lone_article_the_lone_main_element_is_handed_to_trafilatura() -> None:
    body = f"<main><h1>Budget</h1><article>{PARAGRAPH * 5}</article><article>{PARAGRAPH * 5}</article></main>"
    route = route_of(news_page(body))
    assert route.name == "element"
    assert route.element is not None and route.element.html.count("<article>") == 2


def test_without_article_or_main_a_lone_element_named_as_the_content_is_handed_to_trafilatura() -> None:
    story = f"<h1>Budget</h1>{PARAGRAPH * 10}"
    body = f'<div class="sidebar">{PARAGRAPH}</div><div class="td-post-content tagdiv">{story}</div>'
    route = route_of(news_page(body))
    assert route.name == "element"
    assert (
        route.element is not None and "Budget" in route.element.html and "sidebar" not in route.element.html
    )


def test_content_elements_side_by_side_are_a_listing_read_whole() -> None:
    body = (
        f'<div class="entry-content">{PARAGRAPH * 10}</div><div class="entry-content">{PARAGRAPH * 10}</div>'
    )
    assert route_of(news_page(body)) == TextRoute("page")


def test_an_article_element_is_preferred_to_a_content_element() -> None:
    body = (
        f'<div class="post-content">{PARAGRAPH * 10}</div><article><h1>Budget</h1>{PARAGRAPH * 10}</article>'
    )
    route = route_of(news_page(body))
    assert route.element is not None and route.element.tag == "article"


@pytest.mark.parametrize("selector", CONTENT_ELEMENTS.split(", "))
def test_every_content_name_is_one_trafilatura_picks_first(selector: str) -> None:
    """Each name the route looks for is one trafilatura's first content expression takes: the route
    hands trafilatura the element it would itself start from (fails if trafilatura renames them)."""
    from lxml import html as lxml_html  # noqa: PLC0415 (trafilatura's parser, for this check only)
    from trafilatura.xpaths import BODY_XPATH  # noqa: PLC0415

    parts = re.fullmatch(r"(\w+)\[(\w+)(\*?=)([\w-]+)\]", selector)
    assert parts is not None
    tag, attribute, operator, word = parts.groups()
    value = f"x-{word}-y" if operator == "*=" else word
    page = lxml_html.fromstring(f'<html><body><{tag} {attribute}="{value}"><p>Text</p></{tag}></body></html>')
    assert [element.tag for element in BODY_XPATH[0](page)] == [tag]
    assert _only(LexborHTMLParser(f'<{tag} {attribute}="{value}"></{tag}>').css(CONTENT_ELEMENTS)) == tag


def _only(nodes: list[Any]) -> str | None:
    return nodes[0].tag if len(nodes) == 1 else None


def test_the_element_is_cut_before_pruning_so_text_a_script_shows_is_kept() -> None:
    body = f'<article><div style="visibility: hidden">{PARAGRAPH * 10}</div></article>'
    route = route_of(news_page(body))
    assert route.element is not None and route.element.html.count("harbour") == 30


@pytest.mark.parametrize(
    "body",
    [
        f"<article>{PARAGRAPH * 10}</article><article>{PARAGRAPH}</article>",  # teasers beside the story
        f"<article>{PARAGRAPH}</article>{PARAGRAPH * 10}",  # a short box: more likely a teaser
        f"<main>{PARAGRAPH * 10}</main><main>{PARAGRAPH}</main>",  # two main elements
        f"<div>{PARAGRAPH * 10}</div>",  # neither
        f'<div class="post-content">{PARAGRAPH}</div>{PARAGRAPH * 10}',  # a short content box
    ],
)
def test_other_pages_are_read_whole(body: str) -> None:
    assert len((PARAGRAPH * 10).split()) > MIN_ELEMENT_WORDS > len(PARAGRAPH.split())
    assert route_of(news_page(body)) == TextRoute("page")


def _trafilatura_answers(monkeypatch: pytest.MonkeyPatch, answers: dict[str, str | None]) -> list[str]:
    """trafilatura answers by the first key its HTML holds; the HTMLs it was asked for are listed."""
    asked: list[str] = []

    def extract(html: str, **_options: Any) -> str | None:
        asked.append(html)
        return next((answer for key, answer in answers.items() if key in html), None)

    monkeypatch.setattr(text.trafilatura, "extract", extract)
    return asked


def test_trafilatura_reads_the_whole_page_when_the_article_element_gives_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = news_page(f"<article>{PARAGRAPH * 10}</article>")
    asked = _trafilatura_answers(monkeypatch, {"<nav>": "the whole page's text", "<article>": None})
    assert main_text(page, URL, route=route_of(page)) == "the whole page's text"
    assert len(asked) == 2 and "<nav>" not in asked[0] and asked[1] == page


def test_a_shop_page_is_read_without_trafilatura(monkeypatch: pytest.MonkeyPatch) -> None:
    page = news_page(f"<main><h1>Lamp</h1>{PARAGRAPH * 5}</main>")
    asked = _trafilatura_answers(monkeypatch, {})
    found = main_text(page, URL, route=TextRoute("shop"))
    assert asked == [] and found is not None and "harbour and its bridges" in found


def test_a_product_record_takes_its_text_from_resiliparse(monkeypatch: pytest.MonkeyPatch) -> None:
    html = f"""<html><head><script type="application/ld+json">{{"@type": "Product", "name": "Lamp",
"offers": {{"price": "19.90", "priceCurrency": "EUR"}}}}</script></head>
<body><main><h1>Lamp</h1>{PARAGRAPH * 5}</main></body></html>"""
    asked = _trafilatura_answers(monkeypatch, {})
    page = raw_page(html.encode(), URL, fetched_at=datetime(2024, 6, 1, tzinfo=UTC), charset="utf-8")
    record = extract_record(page, schema_version=3)
    assert record["product"]["price"] is not None
    assert asked == [] and "harbour and its bridges" in record["text"]


def test_an_article_element_the_page_hides_is_no_main_element() -> None:
    # A sign-up dialog's <article>, hidden until a script opens it: the markup heuristics prune it.
    html = news_page(f'<div style="visibility:hidden"><article>{PARAGRAPH * 10}</article></div>')
    element = main_element(LexborHTMLParser(html))
    assert element is not None
    assert not element.shown_in(Markup(html).tree)
    assert element.shown_in(Markup(news_page(f"<article>{PARAGRAPH * 10}</article>")).tree)


TOKENS = "".join(f'<span class="k">def</span> <span class="n">f{n}</span>():\n' for n in range(400))
LISTING = f"<pre>{TOKENS}</pre>"  # a highlighter's listing: a <span> per token


@pytest.mark.parametrize(
    ("body", "listing"),
    [
        (f"<h1>reader.py</h1>{LISTING}", True),  # a generated source page: nearly all of it a listing
        (f"{PARAGRAPH * 40}<pre>pip install harbour</pre>", False),  # an article quoting one command
        (f"<pre>x = 1</pre><script>{'var a = 1; ' * 500}</script>{PARAGRAPH}", False),  # scripts are no text
        (PARAGRAPH * 3, False),
    ],
)
def test_a_page_of_mostly_preformatted_text_is_a_listing(body: str, listing: bool) -> None:
    assert preformatted_page(Markup(LexborHTMLParser(news_page(body))).tree) is listing


def test_a_listing_is_read_without_trafilatura(monkeypatch: pytest.MonkeyPatch) -> None:
    html = news_page(f"<h1>reader.py</h1>{LISTING}")
    asked = _trafilatura_answers(monkeypatch, {})
    page = raw_page(html.encode(), URL, fetched_at=datetime(2024, 6, 1, tzinfo=UTC), charset="utf-8")
    record = extract_record(page, schema_version=3)
    assert asked == [] and record["text"] is not None and "def f399():" in record["text"]
