"""Skipping trafilatura's readability comparison: the bound on readability's text, the guard, and the
trafilatura behaviour both rest on (a newer trafilatura that changes it fails here first)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import trafilatura
from lxml.etree import tostring
from trafilatura import core, external
from trafilatura.settings import Extractor
from trafilatura.utils import fromstring_bytes, trim

from dualplane.data_plane.extract.text._trafilatura import readability_skip
from dualplane.data_plane.extract.text._trafilatura.readability_skip import (
    readability_cannot_win,
    readability_text_bound,
    skipping,
)

pytestmark = pytest.mark.unit

SENTENCE = "The council voted on the new budget for the harbour, its bridges and its ferries. "
ARTICLE = "<article>" + "".join(f"<p>{SENTENCE * 4}</p>" for _ in range(6)) + "</article>"
PAGES = {
    "article alone": f"<html><body>{ARTICLE}</body></html>",
    "article in navigation": "<html><body><nav>"
    + "<a href='/x'>Section</a> " * 40
    + f"</nav>{ARTICLE}</body></html>",
    "inline words, no spaces": "<html><body><div>"
    + "<b>ab</b><i>cd</i>" * 200
    + f"</div>{ARTICLE}</body></html>",
    "video iframes": "<html><body>"
    + '<iframe src="https://www.youtube.com/embed/x"></iframe>' * 30
    + f"<div>{SENTENCE}<span>x</span>{SENTENCE}</div>{ARTICLE}</body></html>",
    "scripts with tails": "<html><head><title>Budget</title><style>p{}</style></head><body>"
    + f"<div><script>var a = 1;</script>{SENTENCE}</div>{ARTICLE}</body></html>",
}


def readability_length(html: str) -> int:
    """What trafilatura's comparison measures: readability's text, trimmed."""
    algo = external.try_readability(fromstring_bytes(html))
    return len(trim(tostring(algo, method="text", encoding="utf-8").decode("utf-8")))


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_bound_holds_readabilitys_text(name: str) -> None:
    html = PAGES[name]
    bound = readability_text_bound(fromstring_bytes(html))
    assert bound is not None
    assert 0 < readability_length(html) <= bound


def test_the_video_word_is_counted() -> None:
    html = '<html><body><iframe src="https://vimeo.com/1"></iframe></body></html>'
    assert readability_length(html) == len("VIDEO")
    assert readability_text_bound(fromstring_bytes(html)) == len("VIDEO") + 1


def test_no_bound_where_raw_text_comes_back_escaped() -> None:
    html = "<html><body><xmp>a &amp; b</xmp></body></html>"
    assert readability_length(html) > len(trim(fromstring_bytes(html).text_content()))  # escaped: longer
    assert readability_text_bound(fromstring_bytes(html)) is None
    assert readability_text_bound(fromstring_bytes("<html><body><xmp>a b</xmp></body></html>")) == 4


def test_an_empty_tree_gives_readability_no_text() -> None:
    assert readability_length("<html><body></body></html>") == 0


def test_trafilatura_calls_the_comparison_we_wrap() -> None:
    """trafilatura 2.3's cascade: compare_extraction(cleaned_tree, raw_tree, body, text, options), looked up
    in trafilatura.core, and readability kept only as ``_prefer_readability`` says."""
    assert trafilatura.__version__.startswith("2.3")
    assert list(inspect.signature(external.compare_extraction).parameters) == [
        "cleaned_tree",
        "raw_tree",
        "body",
        "text",
        "options",
    ]
    assert core.compare_extraction is readability_skip._compare_extraction
    assert "compare_extraction(" in inspect.getsource(core._extract_and_compare)
    options = Extractor()
    assert options.focus == "balanced"
    body = fromstring_bytes(f"<html><body>{ARTICLE}</body></html>")
    algo = fromstring_bytes("<html><body><p>x</p></body></html>")
    len_text = 1000
    for len_algo in (1, 999, 1001, 2000):  # never preferred up to twice our length: what the skip rests on
        assert not external._prefer_readability(body, algo, "x" * len_algo, len_text, len_algo, options)
    assert external._prefer_readability(body, algo, "x" * 2001, len_text, 2001, options)
    assert external._prefer_readability(body, algo, "x" * 9, 0, 9, options)  # our text empty
    no_paragraphs = fromstring_bytes("<html><body><div>text</div></body></html>")
    assert external._prefer_readability(no_paragraphs, algo, "x" * 1001, len_text, 1001, options)


def test_the_guard() -> None:
    options = Extractor()
    tree = fromstring_bytes(PAGES["article in navigation"])
    bound = readability_text_bound(tree)
    assert bound is not None
    body = fromstring_bytes(f"<html><body>{ARTICLE}</body></html>")
    assert readability_cannot_win(tree, body, "x" * (bound // 2 + 1), options)
    assert not readability_cannot_win(tree, body, "x" * (bound // 2 - 1), options)
    assert not readability_cannot_win(tree, body, "", options)
    tables = fromstring_bytes(
        "<html><body><table><tr><td>a</td></tr></table><p>b</p><table></table></body></html>"
    )
    assert not readability_cannot_win(tree, tables, "x" * bound, options)
    recall = Extractor()
    recall.focus = "recall"
    assert not readability_cannot_win(tree, body, "x" * bound, recall)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_same_text_with_and_without_the_skip(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    real = external.try_readability

    def counted(tree: Any) -> Any:
        read.append(len(tree.text_content()))
        return real(tree)

    monkeypatch.setattr(external, "try_readability", counted)
    html = PAGES[name]
    whole = trafilatura.extract(html, include_tables=True, deduplicate=False, with_metadata=False)
    assert read and read[-1] > 0  # outside the block, readability reads the page
    with skipping():
        skipped = trafilatura.extract(html, include_tables=True, deduplicate=False, with_metadata=False)
    assert skipped == whole
    if name in {"article alone", "scripts with tails"}:
        assert read[-1] == 0  # there it was skipped
