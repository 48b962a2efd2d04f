"""Python forms of trafilatura's costliest XPath selectors, used inside our calls only, same elements.

trafilatura (2.3.1) picks the nodes it prunes and the block it reads with XPath expressions whose
predicates test ``@id`` and ``@class`` with EXSLT regular expressions (``re:test``). libxml2 evaluates
each predicate of each element in its interpreter and calls back into Python for every ``re:test``
(where lxml also makes a proxy of the element for the attribute's "smart string"): about 10 ms of a
large page's 30 in trafilatura (``benchmarks/extraction-cpu.md``, sixth round). Here each of those selectors
is written as the same test in Python, over lxml's iterators in document order:

- an element test ``self::div or …`` is a tag filter of ``iterdescendants`` (a name without namespace
  matches the same elements in both; ``.//*`` is ``"*"``, elements only, the context node excluded);
- ``string(@a)`` is ``element.get("a") or ""``; ``@a='v'`` is ``element.get("a") == "v"``; a bare ``@a``
  is ``element.get("a") is not None``; ``translate`` of single letters is ``str.replace``;
- ``string(@id|@class)`` is the value of whichever of the two comes first in the element's attribute
  list (libxml2 sorts the union in document order and takes its first node);
- ``re:test(s, p[, 'i'])`` is ``re.search(p, s)``, which is what lxml runs (``re.UNICODE``, and
  ``re.IGNORECASE`` for ``'i'``);
- ``(…)[1]`` is the first match in document order, and ``.//*[…][1]`` (a step's position) the first
  matching child of each parent; a union is sorted in document order.

Each of those selectors in ``trafilatura.xpaths`` is replaced, in its list (and ``BASIC_CLEAN_XPATH`` in
``trafilatura.baseline``), by a :class:`_Selector` that runs the XPath outside :func:`selecting` (any
other caller of trafilatura in the process) and the Python form inside it.
``tests/data_plane/extract/test_trafilatura_xpaths.py`` pins the XPath text each form was written from
(a trafilatura that changes a selector fails there first) and checks that both select the same elements
on real pages, at every point of trafilatura's run where it selects, and on generated trees. The
records of the dev, test, large, docs and sites sets are byte-identical with and without it
(``benchmarks/extraction_speed.py``).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from lxml.etree import XPath  # type: ignore[import-untyped]
from trafilatura import xpaths

from dualplane.data_plane.extract.text._trafilatura.inside_calls import Switch

Tree = Any
"""An lxml element (trafilatura's ``HtmlElement``); lxml ships no types."""
Select = Callable[[Tree], list[Tree]]

_REMEMBERED_VALUES = 4096
"""Attribute values remembered per regular expression (a cache of a pure function, emptied when full)."""

_switch = Switch("trafilatura_xpaths")

_ARTICLE_BLOCKS = ("article", "div", "main", "section")
_DISCARD_BLOCKS = ("div", "item", "list", "p", "section", "span")
_RAW_BLOCKS = ("div", "section", "aside")
_COMMENT_BLOCKS = ("div", "list", "section", "details", "ol", "ul")


def _value(element: Tree, name: str) -> str:
    """XPath's ``string(@name)``: the attribute's value, ``""`` where there is none."""
    value: str | None = element.get(name)
    return value or ""


def _first_value(element: Tree, first: str, second: str) -> str:
    """XPath's ``string(@first|@second)``: the value of whichever comes first on the element."""
    one, two = element.get(first), element.get(second)
    if one is None or two is None:
        return one or two or ""
    names = element.keys()
    return one if names.index(first) < names.index(second) else two  # type: ignore[no-any-return]


def _search(pattern: str, flags: int = 0) -> Callable[[str], bool]:
    """``re:test(value, pattern)``, remembered by value: a page repeats its class names many times."""
    search = re.compile(pattern, re.UNICODE | flags).search
    found: dict[str, bool] = {}

    def test(value: str) -> bool:
        result = found.get(value)
        if result is None:
            if len(found) >= _REMEMBERED_VALUES:  # bounded for a long-running worker; a page repeats its own
                found.clear()
            result = found[value] = search(value) is not None
        return result

    return test


def _first(elements: Iterator[Tree]) -> list[Tree]:
    first = next(elements, None)
    return [] if first is None else [first]


# BODY_XPATH[0]: .//*[self::article or self::div or self::main or self::section][@class='post' or
# @class='entry' or @itemprop='articleBody' or @id='articleContent' or re:test(@id, …) or
# re:test(@class, …)][1]
_ARTICLE_ID = _search(
    "(?:entry|article|art)-content|article__content|article(?:-|__)?body|articleBody|body-text"
)
_ARTICLE_CLASS = _search(
    "post[-_]text|post-body|post-?entry|post[-_]?content|postContent|post_inner_wrapper|article-?text|"
    "articleText|(?:entry|page|text|article|art)-content|article__content|article(?:-|__)?body|articleBody|"
    "ArticleContent|body-text|article__container"
)


def _is_article_body(element: Tree) -> bool:
    id_, class_ = _value(element, "id"), _value(element, "class")
    return (
        element.get("class") in ("post", "entry")
        or element.get("itemprop") == "articleBody"
        or element.get("id") == "articleContent"
        or _ARTICLE_ID(id_)
        or _ARTICLE_CLASS(class_)
    )


def body_0(tree: Tree) -> list[Tree]:
    """``.//*[…][1]``: the position applies to each step, so each parent's first matching child."""
    parents: set[Tree] = set()  # holding the proxies keeps getparent() returning the same objects
    found = []
    for element in tree.iterdescendants(_ARTICLE_BLOCKS):
        if _is_article_body(element):
            parent = element.getparent()
            if parent not in parents:
                parents.add(parent)
                found.append(element)
    return found


# BODY_XPATH[2]
_STORY_ID = _search("^primary|story-body")
_FULLTEXT_CLASS = _search("fulltext", re.IGNORECASE)
_STORY_CLASS = _search(
    "^article |post-bodycopy|story-?content|(?:theme|blog|section|single)-content|single-post|main-column|"
    "wpb_text_column|story-body|field-body"
)
_STORY_CLASSES = frozenset(("postarea", "art-postcontent", "text", "cell", "story"))


def _is_story(element: Tree) -> bool:
    id_, class_ = _value(element, "id"), _value(element, "class")
    return (
        element.get("role") == "article"
        or element.get("id") in ("article", "story")
        or element.get("class") in _STORY_CLASSES
        or _STORY_ID(id_)
        or _FULLTEXT_CLASS(class_)
        or _STORY_CLASS(class_)
    )


def body_2(tree: Tree) -> list[Tree]:
    return _first(element for element in tree.iterdescendants(_ARTICLE_BLOCKS) if _is_story(element))


# BODY_XPATH[3]
_MAIN_ID = _search("content-main|content-body|contentBody")
_MAIN_CLASS = _search("content[-_]main|content(?:-|__)body")


def _is_main_content(element: Tree) -> bool:
    id_, class_ = _value(element, "id"), _value(element, "class")
    return (
        element.get("id") == "content"
        or element.get("class") == "content"
        or _MAIN_ID(id_)
        or _MAIN_CLASS(class_)
        or "main-content" in id_.replace("C", "c").replace("M", "m")
        or "main-content" in class_.replace("C", "c").replace("M", "m")
        or "page-content" in class_.replace("C", "c").replace("P", "p")
    )


def body_3(tree: Tree) -> list[Tree]:
    return _first(element for element in tree.iterdescendants(_ARTICLE_BLOCKS) if _is_main_content(element))


# BODY_XPATH[4]: (.//*[self::article or self::div or self::section][starts-with(@class, 'main') or
# starts-with(@id, 'main') or starts-with(@role, 'main')])[1]|(.//main)[1]
def body_4(tree: Tree) -> list[Tree]:
    """The first ``main``-named block and the first ``<main>``, in document order (the order found)."""
    found: list[Tree] = []
    block = main = False
    for element in tree.iterdescendants(("article", "div", "section", "main")):
        if element.tag == "main":
            if not main:
                main = True
                found.append(element)
        elif not block and any(_value(element, name).startswith("main") for name in ("class", "id", "role")):
            block = True
            found.append(element)
        if block and main:
            break
    return found


# RAW_TREE_PRUNE_XPATH[0]: .//*[self::div or self::section or self::aside][re:test(@id, P) or
# re:test(@class, P)][not(.//h1) or re:test(@id, Q) or re:test(@class, Q)]
_SCROLL = _search("mvp-post-add-(?:box|wrap)|infinite-?scroll")
_ADDED_POST = _search("mvp-post-add-(?:box|wrap)")


def _is_appended_article(element: Tree) -> bool:
    id_, class_ = _value(element, "id"), _value(element, "class")
    if not (_SCROLL(id_) or _SCROLL(class_)):
        return False
    return next(element.iterdescendants("h1"), None) is None or _ADDED_POST(id_) or _ADDED_POST(class_)


def raw_prune_0(tree: Tree) -> list[Tree]:
    return [element for element in tree.iterdescendants(_RAW_BLOCKS) if _is_appended_article(element)]


# RAW_TREE_PRUNE_XPATH[1]
def raw_prune_1(tree: Tree) -> list[Tree]:
    return [e for e in tree.iterdescendants(_RAW_BLOCKS) if "elementor-share-buttons" in _value(e, "class")]


# REMOVE_COMMENTS_AND_LISTS_XPATH[0]: .//*[self::div or self::list or self::section or self::details or
# self::ol or self::ul][re:test(@id, A) or re:test(@class, B)][not(self::ol or self::ul) or
# re:test(@id, C) or re:test(@class, B)]
_COMMENTS_ID = _search("^(?:[Cc]omment(?!ary)|comol|disqus_thread|dsq-comments)")
_COMMENTS_CLASS = _search("^[Cc]omment(?!ary)|(?:article|post)-comments")
_COMMENT_LIST_ID = _search("^(?:[Cc]omment(?!ary)|comol)")


def _is_comments(element: Tree) -> bool:
    id_, class_ = _value(element, "id"), _value(element, "class")
    if not (_COMMENTS_ID(id_) or _COMMENTS_CLASS(class_)):
        return False
    return element.tag not in ("ol", "ul") or _COMMENT_LIST_ID(id_) or _COMMENTS_CLASS(class_)


def remove_comments_and_lists_0(tree: Tree) -> list[Tree]:
    return [element for element in tree.iterdescendants(_COMMENT_BLOCKS) if _is_comments(element)]


# OVERALL_DISCARD_XPATH[0]
_COOKIE = _search("cookie")
_DISCARD_ID = _search(
    "^shar|social|viral|newsletter|syndication|tags|sidebar|banner|bread-?crumb|button|author|"
    "^(?:jp-|dpsp-content)|bmdh|footer|Footer|share|Share|nav|Nav|menu|related|message-container|premium|^ad-"
)
_DISCARD_CLASS = _search(
    "^shar|social|viral|newsletter|syndication|tags|sidebar|banner|bread-?crumb|button|author|"
    "^(?:nav|post-nav|ZendeskForm)|subnav|avigation|navbar|navbox|menu|bar| ad |-ad-|(?:^| )ad-|dfp[Aa]d|"
    "outbrain|taboola|criteo|paid-?content|widget|footer|Footer|byline|Byline|share-|sociable|embedded|embed|"
    "tag-list|consent|modal-content|permission|elated|next-|-stories|most-popular|more-on|meta|rating|"
    "attachment|timestamp|user-info|user-profile|-icon|article-infos|message-container|slide|viewport|"
    "overlay|options|expand|obfuscated|blurred|mol-factbox|yin|zlylin|nfoline"
)


def _is_discarded(element: Tree) -> bool:
    return (
        element.get("data-lp-replacement-content") is not None
        or "nav" in _value(element, "role").replace("N", "n")
        or "MostPopularStories" in _value(element, "data-component")
        or _COOKIE(_first_value(element, "id", "class"))
        or _DISCARD_ID(_value(element, "id"))
        or _DISCARD_CLASS(_value(element, "class"))
    )


def overall_discard_0(tree: Tree) -> list[Tree]:
    return [element for element in tree.iterdescendants(_DISCARD_BLOCKS) if _is_discarded(element)]


# OVERALL_DISCARD_XPATH[1]
_HIDDEN = _search("hidden")
_HIDDEN_ID = _search("reader-comments|akismet")
_HIDDEN_CLASS = _search(
    "^hide-|comments-title|nocomments|-reply-|message|akismet|suggest-links|-hide-|hide-print| hidden| hide|"
    "noprint|notloaded"
)


def _is_hidden(element: Tree) -> bool:
    style = _value(element, "style")
    return (
        element.get("class") == "comments-title"
        or _first_value(element, "id", "class").startswith("reply-")
        or _HIDDEN(_first_value(element, "id", "style"))
        or "display:none" in style
        or "display: none" in style
        or _HIDDEN_ID(_value(element, "id"))
        or _HIDDEN_CLASS(_value(element, "class"))
        or element.get("aria-hidden") == "true"
    )


def overall_discard_1(tree: Tree) -> list[Tree]:
    return [element for element in tree.iterdescendants("*") if _is_hidden(element)]


# TEASER_DISCARD_XPATH[0]
def teaser_discard_0(tree: Tree) -> list[Tree]:
    return [
        element
        for element in tree.iterdescendants(_DISCARD_BLOCKS)
        if "teaser" in _value(element, "id").replace("T", "t")
        or "teaser" in _value(element, "class").replace("T", "t")
    ]


# DISCARD_IMAGE_ELEMENTS[0]
def discard_image_0(tree: Tree) -> list[Tree]:
    return [
        element
        for element in tree.iterdescendants(_DISCARD_BLOCKS)
        if "caption" in _value(element, "id") or "caption" in _value(element, "class")
    ]


# BASIC_CLEAN_XPATH (trafilatura.settings; trafilatura.baseline's basic_cleaning, for html2txt, the
# baseline and jusText): .//aside|.//div[contains(@class|@id, 'footer')]|.//fencedframe|.//footer|
# .//script|.//style|.//svg|.//template|.//*[re:test(@class, C, 'i') or re:test(@id, C, 'i')]
_CLEANED_TAGS = frozenset(("aside", "fencedframe", "footer", "script", "style", "svg", "template"))
_CONSENT = _search(
    "cookie[-_]?(?:banner|bar|consent|law|notice|policy|description)|notice[-_]{0,2}cookie"
    "|consent[-_]?(?:banner|manager|sdk)|borlabs|cookiebot|cmplz|onetrust|moove[-_]?gdpr",
    re.IGNORECASE,
)


def _is_cleaned(element: Tree) -> bool:
    tag = element.tag
    return (
        tag in _CLEANED_TAGS
        or (tag == "div" and "footer" in _first_value(element, "class", "id"))
        or _CONSENT(_value(element, "class"))
        or _CONSENT(_value(element, "id"))
    )


def basic_clean(tree: Tree) -> list[Tree]:
    """A union of descendants: each element once, in document order."""
    return [element for element in tree.iterdescendants("*") if _is_cleaned(element)]


FORMS: dict[str, Select] = {
    "BODY_XPATH[0]": body_0,
    "BODY_XPATH[2]": body_2,
    "BODY_XPATH[3]": body_3,
    "BODY_XPATH[4]": body_4,
    "RAW_TREE_PRUNE_XPATH[0]": raw_prune_0,
    "RAW_TREE_PRUNE_XPATH[1]": raw_prune_1,
    "REMOVE_COMMENTS_AND_LISTS_XPATH[0]": remove_comments_and_lists_0,
    "OVERALL_DISCARD_XPATH[0]": overall_discard_0,
    "OVERALL_DISCARD_XPATH[1]": overall_discard_1,
    "TEASER_DISCARD_XPATH[0]": teaser_discard_0,
    "DISCARD_IMAGE_ELEMENTS[0]": discard_image_0,
    "BASIC_CLEAN_XPATH": basic_clean,
}
"""The Python form of each selector: an item of a list of ``trafilatura.xpaths``, or ``BASIC_CLEAN_XPATH``
as ``trafilatura.baseline`` imported it."""

_BASELINE = importlib.import_module("trafilatura.baseline")  # trafilatura.baseline is also a function's name


class _Selector:
    """Stands for one trafilatura selector: its XPath outside :func:`selecting`, its Python form inside."""

    __slots__ = ("form", "xpath")

    def __init__(self, xpath: XPath, form: Select) -> None:
        self.xpath, self.form = xpath, form

    def __call__(self, tree: Tree, **variables: Any) -> Any:
        if _switch.on and not variables:
            return self.form(tree)
        return self.xpath(tree, **variables)

    def __str__(self) -> str:  # trafilatura logs the BODY_XPATH expression that found the content
        return str(self.xpath)


def _slot(key: str) -> tuple[Any, int | None, str]:
    """Where selector ``key`` lives: a list and an index, or a module and a name."""
    name, _, index = key.partition("[")
    if index:
        return getattr(xpaths, name), int(index.rstrip("]")), name
    return _BASELINE, None, name


def current(key: str) -> Any:
    """What trafilatura calls for selector ``key`` (``"BODY_XPATH[0]"``, ``"BASIC_CLEAN_XPATH"``)."""
    holder, index, name = _slot(key)
    return getattr(holder, name) if index is None else holder[index]


def original(key: str) -> XPath:
    """trafilatura's own XPath for selector ``key``."""
    selector = current(key)
    return selector.xpath if isinstance(selector, _Selector) else selector


def _install() -> None:
    # The lists are shared by reference (main_extractor, core and external imported them by name), so
    # replacing their items in place reaches every caller; basic_cleaning reads its module's global.
    for key, form in FORMS.items():
        holder, index, name = _slot(key)
        xpath = current(key)
        if isinstance(xpath, _Selector):
            continue
        if index is None:
            setattr(holder, name, _Selector(xpath, form))
        else:
            holder[index] = _Selector(xpath, form)


_install()


def selecting() -> AbstractContextManager[None]:
    """Within this block (this thread or task only), trafilatura's selectors run their Python forms."""
    return _switch.within()
