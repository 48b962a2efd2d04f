"""Our shortcuts inside trafilatura, in one private place, entered only on the version they were written for.

Each shortcut replaces a name inside trafilatura and acts only within our own calls
(:mod:`.inside_calls`): readability skipped where it cannot win (:mod:`.readability_skip`), trafilatura's
costly XPath selectors as the same tests in Python (:mod:`.xpaths`), lxml.html's element classes chosen
in C (:mod:`.parser`), jusText's stoplist handed over as the set it makes of it (:mod:`.stoplist`). Each
was written against trafilatura's source of one release, and its tests pin that source: another release
may rename, reorder or change what they replace, and then a shortcut could change texts in silence. So
the shortcut modules are imported only when the installed trafilatura is :data:`WRITTEN_FOR` and every
name they replace is there; on any other version (or if one of them fails to load) :data:`SHORTCUTS` is
empty, a warning says so once, and our calls run plain trafilatura: the same texts, at trafilatura's own
cost.

``text._trafilatura_text`` enters every one of :data:`SHORTCUTS`; ``benchmarks/trafilatura_shortcuts.py``
times each. ``constraints.txt`` pins the release below, so an install from it gets the shortcuts.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager

import trafilatura
from trafilatura import external

WRITTEN_FOR = "2.3.1"
"""The trafilatura release whose source every shortcut was written from (and its tests pin)."""
REPLACED = {
    "trafilatura.core": ("compare_extraction", "load_html"),
    "trafilatura.utils": ("load_html", "fromstring_bytes", "HTML_PARSER"),
    "trafilatura.external": ("fromstring_bytes", "classify_paragraphs", "JT_STOPLIST"),
    "trafilatura.baseline": ("BASIC_CLEAN_XPATH",),
    "trafilatura.xpaths": (
        "BODY_XPATH",
        "RAW_TREE_PRUNE_XPATH",
        "REMOVE_COMMENTS_AND_LISTS_XPATH",
        "OVERALL_DISCARD_XPATH",
        "TEASER_DISCARD_XPATH",
        "DISCARD_IMAGE_ELEMENTS",
    ),
}
"""Names the shortcuts replace or read, by module: checked before any shortcut module is imported."""

Shortcut = Callable[[], AbstractContextManager[None]]
log = logging.getLogger(__name__)


def shortcuts_for(version: str) -> dict[str, Shortcut]:
    """The shortcuts to enter under trafilatura ``version`` (the installed one's, by default): all four
    on :data:`WRITTEN_FOR` with every replaced name present, none on anything else (warned once)."""
    if version != WRITTEN_FOR:
        _warn_once(f"trafilatura {version} is installed, and our shortcuts were written for {WRITTEN_FOR}")
        return {}
    missing = [f"{module}.{name}" for module, names in REPLACED.items() for name in names
               if not hasattr(importlib.import_module(module), name)]  # fmt: skip
    if missing:
        _warn_once(f"trafilatura {version} lacks {', '.join(missing)}")
        return {}
    try:
        # Imported only now: each replaces its names inside trafilatura when imported.
        from dualplane.data_plane.extract.text._trafilatura import (  # noqa: PLC0415
            parser,
            readability_skip,
            stoplist,
            xpaths,
        )
    except Exception as error:
        _warn_once(f"our trafilatura shortcuts failed to load ({type(error).__name__}: {error})")
        return {}
    return {
        "readability skip": readability_skip.skipping,
        "XPath selectors in Python": xpaths.selecting,
        "element classes chosen in C": parser.parsing,
        "jusText's stoplist as its set": stoplist.handing_the_set,
    }


def warm_up() -> None:
    """Make now what the shortcuts entered otherwise make inside the first page that needs it: the
    lower-cased set of jusText's merged stoplist, and jusText's cached copy of that set (~70 ms each)."""
    if "jusText's stoplist as its set" in SHORTCUTS:
        from dualplane.data_plane.extract.text._trafilatura import stoplist  # noqa: PLC0415 (loaded already)

        stoplist.warm_up(external.JT_STOPLIST or external.jt_stoplist_init())


@functools.cache
def _warn_once(reason: str) -> None:
    log.warning("%s: running plain trafilatura (the same texts, at its own CPU cost)", reason)


SHORTCUTS: dict[str, Shortcut] = shortcuts_for(trafilatura.__version__)
"""What our calls of trafilatura enter: each makes trafilatura cheaper inside them, with the same text."""
