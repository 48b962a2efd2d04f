"""jusText gets trafilatura's merged stoplist as the set it would make of it: same texts, no per-call hash."""

from __future__ import annotations

import importlib.metadata
import inspect
from typing import Any

import pytest
import trafilatura
from justext import core as justext_core
from trafilatura import external

from dualplane.data_plane.extract.text import _trafilatura, text
from dualplane.data_plane.extract.text._trafilatura import stoplist

pytestmark = pytest.mark.unit

REDIRECT = """<!DOCTYPE html><html lang="en"><head>
<meta http-equiv="refresh" content="0;URL=struct.Matrix.html"></head>
<body><p>Redirecting to <a href="struct.Matrix.html">struct.Matrix.html</a>...</p></body></html>"""
SHORT = """<html><head><title>Parity</title></head><body><nav><a href="/">Home</a></nav><h1>Enum Parity</h1>
<p>The parity of a permutation: even or odd.</p><p>Variants: Even, Odd.</p>
<footer>MIT</footer></body></html>"""


def test_the_jusText_it_was_written_for() -> None:
    # What the shortcut rests on: classify_paragraphs turns the stoplist into a set through the
    # lru-cached define_stoplist, which lower-cases each word, and tests membership only.
    assert importlib.metadata.version("justext") == "3.0.2"
    assert hasattr(justext_core.define_stoplist, "cache_info")
    assert "stoplist = define_stoplist(stoplist)" in inspect.getsource(justext_core.classify_paragraphs)
    assert justext_core.define_stoplist(("The", "AND")) == frozenset({"the", "and"})
    assert getattr(external, "classify_paragraphs").__wrapped__ is stoplist.ORIGINAL  # noqa: B009


def test_the_set_is_the_one_jusText_makes() -> None:
    merged = external.JT_STOPLIST or external.jt_stoplist_init()
    assert stoplist.lowered(merged) == justext_core.define_stoplist(merged)
    assert stoplist.lowered(merged) is stoplist.lowered(merged)  # made once


@pytest.mark.parametrize("html", [REDIRECT, SHORT])
def test_texts_are_the_same_and_jusText_got_the_set(html: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []
    real = stoplist.lowered
    monkeypatch.setattr(stoplist, "lowered", lambda words: asked.append(words) or real(words))
    with_set = text._trafilatura_text(html, "https://docs.example/p.html")
    assert asked, "jusText was not asked: the page does not exercise the shortcut"
    others = {name: enter for name, enter in _trafilatura.SHORTCUTS.items() if "jusText" not in name}
    monkeypatch.setattr(text, "SHORTCUTS", others)
    asked.clear()
    assert text._trafilatura_text(html, "https://docs.example/p.html") == with_set
    assert not asked
    assert trafilatura.extract(html, deduplicate=False, include_tables=True, with_metadata=False) == with_set


def test_outside_our_calls_jusText_gets_the_tuple(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []
    monkeypatch.setattr(stoplist, "lowered", lambda words: asked.append(words) or frozenset())
    trafilatura.extract(REDIRECT)
    assert not asked


def test_the_warm_up_makes_the_set(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    real = stoplist.lowered
    monkeypatch.setattr(stoplist, "lowered", lambda words: made.append(words) or real(words))
    _trafilatura.warm_up()
    assert made == [external.JT_STOPLIST]


def test_after_the_warm_up_no_page_makes_a_stoplist() -> None:
    # define_stoplist's cache is keyed by its argument: our set needs its own entry, made by the warm-up,
    # not by the first page that asks jusText (30-70 ms of that page's CPU). The cache is emptied first, as
    # in a new process: an earlier test's page may have filled it.
    justext_core.define_stoplist.cache_clear()
    _trafilatura.warm_up()
    misses = justext_core.define_stoplist.cache_info().misses
    assert text._trafilatura_text(REDIRECT, "https://docs.example/p.html") is not None
    assert justext_core.define_stoplist.cache_info().misses == misses
