"""trafilatura's XPath selectors and their Python forms select the same elements: the XPath text each form
was written from is pinned (a trafilatura that changes one fails here first), and both are compared on
real pages, at every point of trafilatura's run where it selects, and on generated trees."""

from __future__ import annotations

import inspect
import itertools
import json
import lzma
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trafilatura
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml.etree import SubElement
from trafilatura.settings import BASIC_CLEAN_XPATH
from trafilatura.utils import fromstring_bytes

from dualplane.data_plane.extract.text._trafilatura import xpaths as trafilatura_xpaths
from dualplane.data_plane.extract.text._trafilatura.xpaths import FORMS, current, original, selecting

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
PAGES_PER_FILE = 5

_ARTICLE_ID = "(?:entry|article|art)-content|article__content|article(?:-|__)?body|articleBody|body-text"
_ARTICLE_CLASS = (
    "post[-_]text|post-body|post-?entry|post[-_]?content|postContent|post_inner_wrapper|article-?text|"
    "articleText|(?:entry|page|text|article|art)-content|article__content|article(?:-|__)?body|articleBody|"
    "ArticleContent|body-text|article__container"
)
_STORY_CLASS = (
    "^article |post-bodycopy|story-?content|(?:theme|blog|section|single)-content|single-post|main-column|"
    "wpb_text_column|story-body|field-body"
)
_COMMENTS = "[Cc]omment(?!ary)|comol"
_COMMENTS_CLASS = "^[Cc]omment(?!ary)|(?:article|post)-comments"
_DISCARD_BOTH = "^shar|social|viral|newsletter|syndication|tags|sidebar|banner|bread-?crumb|button|author|"
_DISCARD_ID = (
    "^(?:jp-|dpsp-content)|bmdh|footer|Footer|share|Share|nav|Nav|menu|related|message-container|premium|^ad-"
)
_DISCARD_CLASS = (
    "^(?:nav|post-nav|ZendeskForm)|subnav|avigation|navbar|navbox|menu|bar| ad |-ad-|(?:^| )ad-|dfp[Aa]d|"
    "outbrain|taboola|criteo|paid-?content|widget|footer|Footer|byline|Byline|share-|sociable|embedded|embed|"
    "tag-list|consent|modal-content|permission|elated|next-|-stories|most-popular|more-on|meta|rating|"
    "attachment|timestamp|user-info|user-profile|-icon|article-infos|message-container|slide|viewport|"
    "overlay|options|expand|obfuscated|blurred|mol-factbox|yin|zlylin|nfoline"
)
_BLOCKS = "self::div or self::item or self::list or self::p or self::section or self::span"
_ARTICLE_BLOCKS = "self::article or self::div or self::main or self::section"
PINNED = {
    "BODY_XPATH[0]": f".//*[{_ARTICLE_BLOCKS}][ @class='post' or @class='entry' or "
    f"@itemprop='articleBody' or @id='articleContent' or re:test(@id, '{_ARTICLE_ID}') or "
    f"re:test(@class, '{_ARTICLE_CLASS}') ][1]",
    "BODY_XPATH[2]": f"(.//*[{_ARTICLE_BLOCKS}][ @role='article' or @id='article' or @id='story' or "
    "@class='postarea' or @class='art-postcontent' or @class='text' or @class='cell' or @class='story' or "
    f"re:test(@id, '^primary|story-body') or re:test(@class, 'fulltext', 'i') or "
    f"re:test(@class, '{_STORY_CLASS}') ])[1]",
    "BODY_XPATH[3]": f"(.//*[{_ARTICLE_BLOCKS}][ @id='content' or @class='content' or "
    "re:test(@id, 'content-main|content-body|contentBody') or "
    "re:test(@class, 'content[-_]main|content(?:-|__)body') or "
    "contains(translate(@id, 'CM','cm'), 'main-content') or "
    "contains(translate(@class, 'CM','cm'), 'main-content') or "
    "contains(translate(@class, 'CP','cp'), 'page-content') ])[1]",
    "BODY_XPATH[4]": "(.//*[self::article or self::div or self::section][ starts-with(@class, 'main') or "
    "starts-with(@id, 'main') or starts-with(@role, 'main')])[1]|(.//main)[1]",
    "RAW_TREE_PRUNE_XPATH[0]": ".//*[self::div or self::section or self::aside][ "
    "re:test(@id, 'mvp-post-add-(?:box|wrap)|infinite-?scroll') or "
    "re:test(@class, 'mvp-post-add-(?:box|wrap)|infinite-?scroll')][ not(.//h1) or "
    "re:test(@id, 'mvp-post-add-(?:box|wrap)') or re:test(@class, 'mvp-post-add-(?:box|wrap)')]",
    "RAW_TREE_PRUNE_XPATH[1]": ".//*[self::div or self::section or self::aside]"
    "[contains(@class, 'elementor-share-buttons')]",
    "REMOVE_COMMENTS_AND_LISTS_XPATH[0]": ".//*[self::div or self::list or self::section or "
    f"self::details or self::ol or self::ul][ re:test(@id, '^(?:{_COMMENTS}|disqus_thread|dsq-comments)') or "
    f"re:test(@class, '{_COMMENTS_CLASS}')][ not(self::ol or self::ul) or "
    f"re:test(@id, '^(?:{_COMMENTS})') or re:test(@class, '{_COMMENTS_CLASS}')]",
    "OVERALL_DISCARD_XPATH[0]": f".//*[{_BLOCKS}][ @data-lp-replacement-content or "
    "contains(translate(@role, 'N', 'n'), 'nav') or contains(@data-component, 'MostPopularStories') or "
    f"re:test(@id|@class, 'cookie') or re:test(@id, '{_DISCARD_BOTH}{_DISCARD_ID}') or "
    f"re:test(@class, '{_DISCARD_BOTH}{_DISCARD_CLASS}')]",
    "OVERALL_DISCARD_XPATH[1]": ".//*[@class='comments-title' or starts-with(@id|@class, 'reply-') or "
    "re:test(@id|@style, 'hidden') or contains(@style, 'display:none') or "
    "contains(@style, 'display: none') or re:test(@id, 'reader-comments|akismet') or "
    "re:test(@class, '^hide-|comments-title|nocomments|-reply-|message|akismet|suggest-links|-hide-|"
    "hide-print| hidden| hide|noprint|notloaded') or @aria-hidden='true']",
    "TEASER_DISCARD_XPATH[0]": f".//*[{_BLOCKS}][ contains(translate(@id, 'T', 't'), 'teaser') or "
    "contains(translate(@class, 'T', 't'), 'teaser')]",
    "DISCARD_IMAGE_ELEMENTS[0]": f".//*[{_BLOCKS}][ contains(@id, 'caption') or contains(@class, 'caption')]",
}
"""The XPath text (white space collapsed) each Python form was written from."""
_CONSENT = (
    "cookie[-_]?(?:banner|bar|consent|law|notice|policy|description)|notice[-_]{0,2}cookie"
    "|consent[-_]?(?:banner|manager|sdk)|borlabs|cookiebot|cmplz|onetrust|moove[-_]?gdpr"
)
PINNED["BASIC_CLEAN_XPATH"] = (
    ".//aside|.//div[contains(@class|@id, 'footer')]|.//fencedframe|.//footer|.//script|.//style|.//svg|"
    f".//template|.//*[re:test(@class, '{_CONSENT}', 'i') or re:test(@id, '{_CONSENT}', 'i')]"
)


def same(one: list[Any], two: list[Any]) -> bool:
    return len(one) == len(two) and all(a is b for a, b in zip(one, two, strict=True))


def test_each_form_was_written_from_trafilaturas_selector() -> None:
    assert trafilatura.__version__ == "2.3.1"
    assert set(FORMS) == set(PINNED)
    for key, path in PINNED.items():
        assert " ".join(original(key).path.split()) == path, key
        assert isinstance(current(key), trafilatura_xpaths._Selector), key
    assert original("BASIC_CLEAN_XPATH") is BASIC_CLEAN_XPATH
    assert "BASIC_CLEAN_XPATH(tree)" in inspect.getsource(sys.modules["trafilatura.baseline"].basic_cleaning)


def test_outside_our_calls_trafilatura_runs_its_xpath(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = fromstring_bytes("<html><body><div class='sidebar'><p>x</p></div></body></html>")
    selector = current("OVERALL_DISCARD_XPATH[0]")
    monkeypatch.setattr(selector, "form", lambda tree: pytest.fail("the Python form ran outside our calls"))
    assert [element.get("class") for element in selector(tree)] == ["sidebar"]
    with selecting(), pytest.raises(pytest.fail.Exception):
        selector(tree)


def real_pages() -> Iterator[str]:
    for name in ("articles.jsonl.xz", "products.jsonl.xz"):
        with lzma.open(DATA / name, "rt", encoding="utf-8") as lines:
            yield from (json.loads(line)["html"] for line in itertools.islice(lines, PAGES_PER_FILE))


def test_the_same_elements_wherever_trafilatura_selects(monkeypatch: pytest.MonkeyPatch) -> None:
    """On real pages, at every point of trafilatura's run where it selects; and the same text."""
    compared: list[str] = []
    for key, form in FORMS.items():
        xpath = original(key)

        def both(tree: Any, xpath: Any = xpath, form: Any = form, key: str = key) -> list[Any]:
            expected = xpath(tree)
            assert same(form(tree), expected), key
            compared.append(key)
            return list(expected)

        monkeypatch.setattr(current(key), "form", both)
    options: dict[str, Any] = {"include_comments": False, "deduplicate": False, "with_metadata": False}
    for html in real_pages():
        whole = trafilatura.extract(html, **options)
        with selecting():
            assert trafilatura.extract(html, **options) == whole
    assert set(compared) >= {key for key in FORMS if not key.startswith("BODY_XPATH")} | {"BODY_XPATH[0]"}


# Trees made of the tags the selectors name, with attribute values made of the words their tests look for.
TAGS = (
    "article", "div", "main", "section", "aside", "p", "span", "item", "list", "ol", "ul", "details", "h1",
    "a", "footer", "script", "style", "svg", "template", "fencedframe",
)  # fmt: skip
NAMES = (
    "id", "class", "style", "role", "itemprop", "aria-hidden", "data-component",
    "data-lp-replacement-content",
)  # fmt: skip
WORDS = (
    "post", "entry", "articleBody", "articleContent", "article-content", "post-text", "Comment", "comments",
    "commentary", "comol", "disqus_thread", "nav", "Nav", "Navigation", "main", "Main-Content",
    "page-Content", "content", "content-main", "teaser", "Teaser", "caption", "hidden", "hide-",
    "display:none", "reply-", "footer", "site-Footer", "cookie-banner", "Cookie_Consent", "OneTrust",
    "notice--cookie", "display: none", "cookie", "mvp-post-add-box", "infinite-scroll",
    "elementor-share-buttons", "fulltext",
    "FullText", "primary", "story", "story-body", "text", "ad-", " ad ", "MostPopularStories", "true",
    "article", "sidebar", "widget", "post-comments", "comments-title", "share", "meta", "é", "",
)  # fmt: skip
ORDERED = (("id", "class"), ("class", "id"), ("id", "style"), ("style", "id"))
"""Pairs whose order decides ``string(@id|@class)``, ``string(@class|@id)`` and ``string(@id|@style)``."""


def catalog() -> Any:
    """One element per tag, attribute and word, and per tag and ordered pair of two words, each alone in a
    ``<div>`` of its own (so that a first match is each wrapper's, not the tree's)."""
    tree = fromstring_bytes("<html><body></body></html>")
    body = tree.find("body")
    words = ("cookie", "reply-x", "hidden", "footer", "x")
    pairs = [(a, b) for a in (*words, "") for b in words]
    for tag in TAGS:
        cases = [[(name, word)] for name in NAMES for word in WORDS]
        cases += [[(one, a), (two, b)] for one, two in ORDERED for a, b in pairs]
        for attributes in cases:
            element = SubElement(SubElement(body, "div"), tag)
            for name, value in attributes:
                element.set(name, value)
            if tag in ("div", "section", "aside"):
                SubElement(element, "h1")  # not(.//h1)
    return tree


def test_the_same_elements_on_a_catalog_of_attributes() -> None:
    tree = catalog()
    body = tree.find("body")
    for key, form in FORMS.items():
        expected = original(key)(body)
        assert same(form(body), expected), key
        if key == "BODY_XPATH[0]" or not key.startswith("BODY_XPATH"):
            assert expected, key  # each selector selects something here
        else:  # the first match only: asked of each wrapper
            for wrapper in (
                wrapper for wrapper in body if wrapper[0].tag in ("article", "div", "main", "section")
            ):
                assert same(form(wrapper), original(key)(wrapper)), key


@pytest.mark.parametrize(
    "html",
    [
        "<main><p>a</p></main><div class='main'><p>b</p></div>",
        "<div class='main'><p>b</p></div><main><p>a</p></main>",
        "<main><section id='main-x'><p>b</p></section></main>",
        "<article role='main'><main><p>a</p></main></article>",
    ],
)
def test_a_union_in_document_order(html: str) -> None:
    tree = fromstring_bytes(f"<html><body>{html}</body></html>")
    expected = original("BODY_XPATH[4]")(tree)
    assert len(expected) == 2
    assert same(FORMS["BODY_XPATH[4]"](tree), expected)


values = st.sampled_from(WORDS) | st.lists(
    st.sampled_from(WORDS) | st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=3), max_size=3
).map("".join)
attributes = st.lists(st.tuples(st.sampled_from(("id", "class", *NAMES)), values), max_size=3)
nodes = st.recursive(
    st.tuples(st.sampled_from(TAGS), attributes, st.just([])),
    lambda children: st.tuples(st.sampled_from(TAGS), attributes, st.lists(children, max_size=4)),
    max_leaves=30,
)


def build(parent: Any, node: tuple[str, list[tuple[str, str]], list[Any]]) -> None:
    tag, attrs, children = node
    element = SubElement(parent, tag)
    element.text = "x"
    for name, value in attrs:  # in the order drawn: string(@id|@class) depends on it
        if element.get(name) is None:
            element.set(name, value)
    for child in children:
        build(element, child)


@settings(max_examples=100, deadline=None)
@given(st.lists(nodes, min_size=1, max_size=4))
def test_the_same_elements_on_generated_trees(roots: list[Any]) -> None:
    """Nesting: each parent's first match, the first match of a tree, ``not(.//h1)``, a union's order."""
    tree = fromstring_bytes("<html><body></body></html>")
    body = tree.find("body")
    for node in roots:
        build(body, node)
    for key, form in FORMS.items():
        for context in (tree, body, body[0]):
            assert same(form(context), original(key)(context)), key
