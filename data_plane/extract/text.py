"""Main text with boilerplate removed (trafilatura), and an article's body cut out of it.

trafilatura runs without its metadata pass: that pass guesses dates relative to today's date, which
would make records depend on when they were extracted. Its output is deterministic for given HTML.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable

import trafilatura

from data_plane.extract.boilerplate import trim_boilerplate
from data_plane.extract.markup import Markup
from data_plane.extract.markup import line as line_of

MAX_TEXT_BYTES = 300_000
"""Main text (and article body) longer than this in UTF-8 is cut, so that a record holding both fits a
default 1 MB Kafka message; the raw page keeps the whole HTML. Counted in bytes, not characters, so
that a long article in a one-byte script is not cut at a third of what a three-byte script may hold
(a 100,000-character cut lost the references of a long Wikipedia page)."""
MAX_HTML_CHARS = 3_000_000
"""trafilatura reads at most this much HTML (after scripts, styles and comments are cut from larger
pages): its time grows faster than linearly, and the first megabytes hold far more than MAX_TEXT_BYTES."""
KICKER_WORDS = 4
KICKER_CHARS = 40
"""A leading line is a kicker ("Culture", "24 July 2015") when it has at most KICKER_WORDS words in at
most this many columns."""
BYLINE_WORDS = 12

_BULK = re.compile(
    r"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<svg\b.*?</svg\s*>", re.I | re.S
)

logging.getLogger("trafilatura").setLevel(logging.ERROR)  # it logs every page it finds too short


def main_text(
    html: str, url: str | None, link_texts: Callable[[], Collection[str]] | None = None
) -> str | None:
    """The page's main content as plain text (paragraphs on their own lines), or ``None`` when empty.

    Related-content tails and copyright lines that trafilatura keeps are cut by their wording, and
    teaser lines by the texts of the page's links, which ``link_texts`` gives when asked (only for a
    line that looks like a teaser; :func:`link_texts`, :mod:`~data_plane.extract.boilerplate`).
    """
    if len(html) > MAX_HTML_CHARS:
        html = _BULK.sub("", html)[:MAX_HTML_CHARS]
    try:
        text = trafilatura.extract(
            html, url=url, include_comments=False, include_tables=True, deduplicate=False, with_metadata=False
        )
    except Exception:  # trafilatura and lxml raise a zoo of errors on pathological markup
        logging.getLogger(__name__).debug("trafilatura failed on %s", url, exc_info=True)
        return None
    text = trim_boilerplate(text or "", link_texts).strip()
    return clip_text(text) or None


def link_texts(page: Markup) -> frozenset[str]:
    """The texts of the page's links, spaces collapsed: teaser lines in the main text are told by them."""
    return frozenset(line_of(anchor) for anchor in page.tree.css("a[href]"))


def article_body(text: str, *, headline: str | None, standfirsts: Iterable[str] = ()) -> str | None:
    """``text`` without the lines that open an article page but are not its body.

    Leading lines are dropped while they are the headline, a standfirst (text the markup marks as
    one, see :func:`~data_plane.extract.article_markup.standfirsts`), a short kicker ("Culture", a
    date) or a "By …" byline; paragraphs are separated by a blank line. The page description is not
    dropped for being the description: many sites make it from the first paragraph of the body.
    """
    skip = {_key(value) for value in (headline, *standfirsts) if value}
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    start = 0
    while start < len(lines) - 1 and _is_preamble(lines[start], skip):
        start += 1
    return clip_text("\n\n".join(lines[start:])) or None


def clip_text(text: str) -> str:
    """``text`` cut to at most ``MAX_TEXT_BYTES`` of UTF-8, at a character boundary."""
    if len(text) <= MAX_TEXT_BYTES // 4:  # no character takes more than four bytes
        return text
    return text.encode("utf-8")[:MAX_TEXT_BYTES].decode("utf-8", "ignore")


def _is_preamble(line: str, skip: set[str]) -> bool:
    words = line.split()
    if _key(line) in skip or (len(words) <= KICKER_WORDS and _width(line) <= KICKER_CHARS):
        return True
    return line.lower().startswith("by ") and len(words) <= BYLINE_WORDS


def _width(line: str) -> int:
    """Characters, wide ones (CJK) counted twice: a sentence in Chinese may hold no space at all."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)


def _key(text: str) -> str:
    return " ".join(text.lower().split())
