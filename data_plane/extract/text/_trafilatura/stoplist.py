"""jusText's stoplist handed over as the lower-cased set it makes of it, inside our calls.

Where trafilatura's own text is short or unclean, it asks jusText (``try_justext``) with its merged
stoplist of every language, ``JT_STOPLIST``: a tuple of ~154,000 words. jusText's
``classify_paragraphs`` turns it into a lower-cased frozenset through ``define_stoplist``, which is
``lru_cache``-d: the set is made once, but the cache key is the tuple, and hashing a tuple of 154,000
strings on every call costs ~3.5 ms. That is most of trafilatura's cost on a short page (a 300-byte
redirect page: 6.7 ms with it), and documentation sites are mostly short pages.

Inside our calls, ``classify_paragraphs`` gets that same set instead of the tuple: a frozenset caches
its hash, so the lookup is O(1) after the first, and ``define_stoplist`` of the set is the set of the
same lower-cased words. jusText tests membership only, so every classification, and every text, is
as before (``tests/data_plane/extract/test_trafilatura_stoplist.py``). Another stoplist (a target
language's) is passed through untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from justext import core as justext_core
from trafilatura import external

from dualplane.data_plane.extract.text._trafilatura.inside_calls import Switch

_switch = Switch("justext_stoplist")
_lowered: dict[int, tuple[Any, frozenset[str]]] = {}  # id(JT_STOPLIST) -> (that tuple, its set)


def lowered(stoplist: Iterable[str]) -> frozenset[str]:
    """The set ``define_stoplist`` makes of ``stoplist``: its words, lower-cased."""
    found = _lowered.get(id(stoplist))
    if found is None or found[0] is not stoplist:
        found = (stoplist, frozenset(word.lower() for word in stoplist))
        _lowered.clear()  # one merged stoplist per process: keep only the current one
        _lowered[id(stoplist)] = found
    return found[1]


def warm_up(stoplist: Iterable[str]) -> None:
    """Make the set of ``stoplist`` and jusText's own cached copy of it now: ``classify_paragraphs`` hands
    our set to ``define_stoplist``, whose cache is keyed by its argument, so without this the first page
    that needs jusText in a process lower-cased the 154,000 words again (30-70 ms of CPU, inside that
    page's extraction and the service's ``dualplane_extract_cpu_seconds``)."""
    justext_core.define_stoplist(lowered(stoplist))


def _dispatch(original: Callable[..., Any]) -> Callable[..., Any]:
    def classify_paragraphs(paragraphs: Any, stoplist: Any, *args: Any, **kwargs: Any) -> Any:
        merged = external.JT_STOPLIST
        if _switch.on and merged is not None and stoplist is merged:
            stoplist = lowered(merged)
        return original(paragraphs, stoplist, *args, **kwargs)

    classify_paragraphs.__wrapped__ = original  # type: ignore[attr-defined]
    return classify_paragraphs


def _install() -> None:
    # trafilatura.external imported the name: the wrapper replaces it there.
    current = getattr(external, "classify_paragraphs")  # noqa: B009 (imported there, not re-exported)
    if not hasattr(current, "__wrapped__"):
        setattr(external, "classify_paragraphs", _dispatch(current))  # noqa: B010 (not re-exported)


_install()
ORIGINAL = justext_core.classify_paragraphs


def handing_the_set() -> AbstractContextManager[None]:
    """Within this block (this thread or task only), jusText gets trafilatura's stoplist as its set."""
    return _switch.within()
