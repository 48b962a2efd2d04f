"""trafilatura's parser with the element classes chosen in C: the same trees, node for node and class for
class, as trafilatura's own parser; and what that rests on in lxml and trafilatura (pinned)."""

from __future__ import annotations

import importlib
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
from lxml import html as lxml_html
from lxml.etree import SubElement, tostring

from dualplane.data_plane.extract.text._trafilatura import parser as trafilatura_parser
from dualplane.data_plane.extract.text._trafilatura.parser import (
    PARSER,
    PARSER_OPTIONS,
    case_variants,
    parsing,
)

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
utils = importlib.import_module("trafilatura.utils")
core = importlib.import_module("trafilatura.core")
external = importlib.import_module("trafilatura.external")


def test_trafilaturas_parser_and_the_functions_run_with_ours() -> None:
    assert trafilatura.__version__ == "2.3.1"
    options = ", ".join(f"{name}={value!r}".replace("'", '"') for name, value in PARSER_OPTIONS.items())
    assert f"HTML_PARSER = HTMLParser({options})" in inspect.getsource(utils)
    assert type(utils.HTML_PARSER) is lxml_html.HTMLParser
    for function in (utils.load_html, utils.fromstring_bytes):
        assert "HTML_PARSER" in function.__code__.co_names  # the one global ours changes
    assert core.load_html.__wrapped__ is utils.load_html
    assert external.fromstring_bytes.__wrapped__ is utils.fromstring_bytes
    assert "load_html(filecontent" in inspect.getsource(core.bare_extraction)


def test_the_lookup_gives_lxml_htmls_classes() -> None:
    """lxml.html's lookup: the lower-cased name's class, or HtmlElement; and one class per other node type."""
    classes = lxml_html.HtmlElementClassLookup._default_element_classes
    assert sorted(classes) == ["form", "input", "label", "select", "textarea"]
    assert "name.lower()" in inspect.getsource(lxml_html.HtmlElementClassLookup.lookup)
    # names other than ASCII case variants lower-case to none of those: the one non-ASCII character that
    # lower-cases to ASCII is the Kelvin sign ("k"), in none of them
    to_ascii = {
        char for char in map(chr, range(sys.maxunicode + 1)) if not char.isascii() and char.lower().isascii()
    }
    assert to_ascii == {"\u212a"} and not any("k" in name for name in classes)
    assert len(case_variants("input")) == 32 and "InPuT" in case_variants("input")
    html = (
        "<html><body><FORM><Input><select><TextArea></TextArea></select><label>x</label></FORM></body></html>"
    )
    trees = [
        lxml_html.fromstring(html, parser=parser)
        for parser in (PARSER, lxml_html.HTMLParser(**PARSER_OPTIONS))
    ]
    for tree in trees:  # the parser lower-cases names, code may not
        for name in ("FoRm", "INPUT", "Label", "sElEcT", "TEXTarea", "formx", "o:p"):
            SubElement(tree.find("body"), name)
    same_trees(*trees)
    assert type(trees[0].find(".//form")) is lxml_html.FormElement
    with_comments = lxml_html.HTMLParser(collect_ids=False, remove_comments=False, remove_pis=False)
    with_comments.set_element_class_lookup(trafilatura_parser.element_class_lookup())
    html = "<html><body><!-- c --><?pi x?><p>y</p></body></html>"
    same_trees(lxml_html.fromstring(html, parser=with_comments), lxml_html.fromstring(html))


def same_trees(ours: Any, theirs: Any) -> None:
    assert tostring(ours) == tostring(theirs)
    for one, two in itertools.zip_longest(ours.iter(), theirs.iter()):
        assert type(one) is type(two)
        assert one.tag == two.tag


def real_pages() -> Iterator[str]:
    for name in ("articles.jsonl.xz", "products.jsonl.xz"):
        with lzma.open(DATA / name, "rt", encoding="utf-8") as lines:
            yield from (json.loads(line)["html"] for line in itertools.islice(lines, 5))


def test_the_same_trees_and_text_on_real_pages() -> None:
    options: dict[str, Any] = {"include_comments": False, "deduplicate": False, "with_metadata": False}
    for html in real_pages():
        theirs = core.load_html(html)
        assert theirs.getroottree().parser is utils.HTML_PARSER  # outside our calls, trafilatura's parser
        with parsing():
            ours = core.load_html(html)
            assert ours.getroottree().parser is PARSER
            same_trees(ours, theirs)
            assert external.fromstring_bytes(html).getroottree().parser is PARSER
            text = trafilatura.extract(html, **options)
        assert text == trafilatura.extract(html, **options)
