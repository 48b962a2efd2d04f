"""Skip trafilatura's readability comparison where it provably cannot change trafilatura's text.

After its own extraction, trafilatura (2.3) runs readability on a copy of the page and keeps
readability's text instead of its own only when ``_prefer_readability`` says so
(``trafilatura.external.compare_extraction``). Outside trafilatura's recall mode (the mode our
calls run in is ``balanced``; its own recall retry keeps the full comparison), that needs one of:

- its own text empty;
- readability's text more than twice as long as its own (``len_algo > 2 * len_text``);
- readability's text longer than ``2 * min_extracted_size`` and its own body without paragraph text,
  or with more tables than paragraphs.

Readability's text cannot be longer than :func:`readability_text_bound` of its input tree: it only
drops and moves whole text nodes (scripts, styles, unlikely candidates, the article's siblings), never
splits one, and writes one word ("VIDEO") into a video ``<iframe>``. Its output is serialized as XML
and parsed again as HTML, which keeps every text's length except inside the elements libxml2 reads as
raw text (``<xmp>`` and its kin), where ``&`` and ``<`` come back escaped; a page holding those
characters there is never skipped. So where own text is at least half that bound, holds paragraph
text and no more tables than paragraphs, readability cannot win, and trafilatura's comparison runs
on an empty tree instead (readability's text is then empty, which never wins), so that what follows
it in ``compare_extraction`` (jusText for short or unclean texts) runs exactly as before.

On the large dev pages it skips 55 of 88 comparisons, saving readability's ~8 ms on each for ~2 ms of
guard on every one (net ~2.5 ms a page; benchmarks/extraction-cpu.md). Every record of the dev, test,
large and docs sets is byte-identical with and without the skip (``benchmarks/extraction_speed.py``).
The behaviour relied upon is pinned by ``tests/data_plane/extract/test_readability_skip.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from trafilatura import core, external
from trafilatura.utils import fromstring_bytes

from dualplane.data_plane.extract.text._trafilatura.inside_calls import Switch

_VIDEO_IFRAME_CHARS = len("VIDEO") + 1
"""What readability may add per ``<iframe>``: its word and a space."""
_READABILITY_DROPS = ("script", "style")
"""Readability drops these first (and fenced frames, left in the bound), with their text but not their
tails. Both hold raw text only, so neither nests in the other, and no text is subtracted twice."""
_RAW_TEXT_TAGS = ("xmp", "noembed", "noframes", "plaintext", "noscript", "iframe")
"""Elements libxml2 may read as raw text, where ``&``, ``<`` and ``>`` come back from XML escaped."""
_ESCAPED = frozenset("&<>")

_switch = Switch("readability_skip")
_original: Callable[..., tuple[Any, str]] = external.compare_extraction


def readability_text_bound(raw_tree: Any) -> int | None:
    """The most characters readability's text of ``raw_tree`` can hold, after trafilatura's ``trim``.

    ``None`` where no bound is known (raw-text elements holding characters that serialization escapes).
    Each kept text node adds at most its own trimmed length and one space; each iframe at most "VIDEO ".
    """
    for element in raw_tree.iter(_RAW_TEXT_TAGS):
        if any(_ESCAPED.intersection(text) for text in element.itertext(with_tail=False)):
            return None
    dropped = sum(_trimmed_plus_one([element.text or ""]) for element in raw_tree.iter(_READABILITY_DROPS))
    iframes = sum(1 for _ in raw_tree.iter("iframe"))
    return _trimmed_plus_one(raw_tree.itertext()) - dropped + _VIDEO_IFRAME_CHARS * iframes


def _trimmed_plus_one(texts: Iterable[str]) -> int:
    """The sum, over the non-blank ``texts``, of ``len(trim(text)) + 1``: their characters other than
    white space, and one per word (joined by spaces, no two texts share a word)."""
    words = " ".join(texts).split()
    return sum(map(len, words)) + len(words)


def readability_cannot_win(raw_tree: Any, body: Any, text: str, options: Any) -> bool:
    """True where ``_prefer_readability`` returns False whatever readability extracts from ``raw_tree``."""
    len_text = len(text)
    if options.focus == "recall" or len_text == 0:
        return False
    bound = readability_text_bound(raw_tree)
    if bound is None or bound > 2 * len_text:
        return False
    if bound <= 2 * options.min_extracted_size:
        return True
    return bool(body.xpath(".//p//text()")) and len(body.findall(".//table")) <= len(body.findall(".//p"))


def _compare_extraction(
    cleaned_tree: Any, raw_tree: Any, body: Any, text: str, options: Any
) -> tuple[Any, str]:
    if _switch.on and readability_cannot_win(raw_tree, body, text, options):
        raw_tree = fromstring_bytes("<html><body></body></html>")
    return _original(cleaned_tree, raw_tree, body, text, options)


# trafilatura.core imported the name: the wrapper replaces it there, and acts only inside skipping().
setattr(core, "compare_extraction", _compare_extraction)  # noqa: B010 (not re-exported, for mypy)


def skipping() -> AbstractContextManager[None]:
    """Within this block (this thread or task only), trafilatura skips readability where it cannot win."""
    return _switch.within()
