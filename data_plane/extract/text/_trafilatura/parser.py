"""trafilatura's HTML parser with the element classes chosen in C, inside our calls only: same trees.

Each time lxml hands Python a node of a tree (iterating, an XPath result, a parent), it makes a proxy
whose class the parser's lookup chooses. trafilatura's parser (``trafilatura.utils.HTML_PARSER``, an
``lxml.html.HTMLParser``) chooses with ``HtmlElementClassLookup.lookup``, a Python method: about 4,000
calls in each of our calls of trafilatura on the large pages. lxml's C lookups make the same choice:

- ``HtmlElementClassLookup`` gives an element the class its lower-cased name has in
  ``_default_element_classes`` (``FormElement`` for "form", …), or ``HtmlElement``; a comment
  ``HtmlComment``, a processing instruction ``HtmlProcessingInstruction``, an entity ``HtmlEntity``;
- an ``ElementNamespaceClassLookup`` holding, for elements without namespace, every name whose lower
  case is one of those names (only ASCII letters lower to ASCII letters outside "k", which none holds:
  the test checks every code point), over an ``ElementDefaultClassLookup`` of the four classes, gives
  the same for every node of a tree lxml's HTML parser builds (it gives no element a namespace).

:data:`PARSER` is trafilatura's parser (the same options) with that lookup. trafilatura's
``load_html`` and ``fromstring_bytes`` are run as they are (their code objects) but with globals where
``HTML_PARSER`` is :data:`PARSER`, and stand for the originals where ``trafilatura.core`` (the page) and
``trafilatura.external`` (readability's output) call them, inside :func:`parsing` only. Trees copied from
those keep the parser. ``tests/data_plane/extract/test_trafilatura_parser.py`` pins both, and checks that
the trees are the same, node for node and class for class, on real pages.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from contextlib import AbstractContextManager
from itertools import product
from typing import Any

from lxml import etree  # type: ignore[import-untyped]
from lxml import html as lxml_html

from dualplane.data_plane.extract.text._trafilatura.inside_calls import Switch

_utils = importlib.import_module("trafilatura.utils")
_core = importlib.import_module("trafilatura.core")
_external = importlib.import_module("trafilatura.external")

_switch = Switch("trafilatura_parser")


def case_variants(name: str) -> list[str]:
    """Every name whose ``lower()`` is ``name`` (ASCII letters)."""
    return ["".join(letters) for letters in product(*({char, char.upper()} for char in name))]


def element_class_lookup() -> Any:
    """A lookup in C choosing the classes ``lxml.html.HtmlElementClassLookup()`` chooses."""
    lookup = etree.ElementNamespaceClassLookup(
        etree.ElementDefaultClassLookup(
            element=lxml_html.HtmlElement,
            comment=lxml_html.HtmlComment,
            pi=lxml_html.HtmlProcessingInstruction,
            entity=lxml_html.HtmlEntity,
        )
    )
    without_namespace = lookup.get_namespace(None)
    for name, element_class in lxml_html.HtmlElementClassLookup._default_element_classes.items():
        for variant in case_variants(name):
            without_namespace[variant] = element_class
    return lookup


PARSER_OPTIONS: dict[str, Any] = {
    "collect_ids": False,
    "default_doctype": False,
    "encoding": "utf-8",
    "remove_comments": True,
    "remove_pis": True,
}
"""trafilatura's ``HTML_PARSER`` options (``HTMLParser.copy()`` would not carry ``collect_ids``)."""
PARSER = lxml_html.HTMLParser(**PARSER_OPTIONS)
PARSER.set_element_class_lookup(element_class_lookup())


def _with_parser(function: Callable[..., Any], namespace: dict[str, Any]) -> Callable[..., Any]:
    """``function``'s code with ``namespace`` for globals."""
    return types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__)


_namespace = {**vars(_utils), "HTML_PARSER": PARSER}
fromstring_bytes = _with_parser(_utils.fromstring_bytes, _namespace)
_namespace["fromstring_bytes"] = fromstring_bytes
load_html = _with_parser(_utils.load_html, _namespace)


def _dispatch(original: Callable[..., Any], ours: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return (ours if _switch.on else original)(*args, **kwargs)

    call.__wrapped__ = original  # type: ignore[attr-defined]
    return call


def _install() -> None:
    for module, name, ours in (
        (_core, "load_html", load_html),
        (_external, "fromstring_bytes", fromstring_bytes),
    ):
        current = getattr(module, name)  # the names these modules imported: where they look them up
        if not hasattr(current, "__wrapped__"):
            setattr(module, name, _dispatch(current, ours))


_install()


def parsing() -> AbstractContextManager[None]:
    """Within this block (this thread or task only), trafilatura parses pages with :data:`PARSER`."""
    return _switch.within()
