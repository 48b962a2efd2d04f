"""The item number a product page's URL carries, taken only when the page prints the same id.

Shops put the product's id in its address (``/dp/B01MUGXRT9``, ``/-/A-13787174``, ``/YLS0030.html``,
``/492398-01/``) and most print it too ("Item #13787174", "Style YLS0030"). The URL alone is no proof:
many carry a database id that the page never shows, or a year, or a model number. So an id is taken
only when it is printed, as a whole token, in the page's main content, and only as a last resort, when
no declared, labelled or tracked item number was found. It is this page's own address, so the id can
never be another product's.

Ids are read from the path only (queries carry session, tracking and variant parameters), last
segment first (the product's id ends the path; categories and names come before it), and must look
like an id: digits only of ``MIN_DIGITS`` or more, or letters and digits mixed of ``MIN_MIXED`` or
more (a word is never one, a four-digit year never).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from urllib.parse import unquote, urlsplit

from dualplane.data_plane.extract.product.identifiers import sku_of

MIN_DIGITS = 5
MIN_MIXED = 5
_EXTENSION = re.compile(r"\.(?:html?|aspx?|php|jsp|do|action|uts)$", re.I)
_PIECES = re.compile(r"[-_/,;+=~ ]+")
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")
_ALNUM = re.compile(r"[\W_]+")


def url_ids(url: str) -> Iterator[str]:
    """Tokens of ``url``'s path that look like item ids, last segment first."""
    segments = [unquote(part) for part in urlsplit(url).path.split("/") if part]
    for segment in reversed(segments):
        for piece in reversed(_PIECES.split(_EXTENSION.sub("", segment))):
            if _looks_like_id(piece):
                yield piece


def _looks_like_id(piece: str) -> bool:
    if piece.isdigit():
        return len(piece) >= MIN_DIGITS
    mixed = bool(_LETTER.search(piece)) and bool(_DIGIT.search(piece))
    return mixed and len(piece) >= MIN_MIXED and sku_of(piece) == piece


def printed_url_id(url: str, shown_text: str, name: str | None = None) -> str | None:
    """The first of ``url``'s ids (:func:`url_ids`) that ``shown_text`` prints as a whole token and that
    is not part of the product's ``name`` (:func:`printed_id`)."""
    return printed_id(url_ids(url), shown_text, name)


def printed_id(candidates: Iterable[str], shown_text: str, name: str | None = None) -> str | None:
    """The first of ``candidates`` (ids the page's own address or cart form carries) that ``shown_text``
    prints as a whole token and that is not part of the product's ``name``: an id in the name ("Dolce &
    Gabbana DG 4249") is the model's number, which the labelling rules and buyers tell apart from the
    shop's item number."""
    named = _ALNUM.sub("", name or "").casefold()
    for candidate in candidates:
        if named and _ALNUM.sub("", candidate).casefold() in named:
            continue
        if re.search(rf"(?<![\w.-]){re.escape(candidate)}(?![\w-]|\.\w)", shown_text):
            return candidate
    return None
