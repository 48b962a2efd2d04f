"""The warm-up loads what the first pages would otherwise pay for."""

from __future__ import annotations

import pytest
from justext.core import define_stoplist
from trafilatura import external

from dualplane.data_plane.extract.record import warm_up

pytestmark = pytest.mark.unit


def test_jusTexts_set_of_the_merged_stoplist_is_made_by_the_warm_up() -> None:
    define_stoplist.cache_clear()
    warm_up()
    before = define_stoplist.cache_info()
    define_stoplist(external.JT_STOPLIST)  # what the jusText rescue asks for, pages given no language
    after = define_stoplist.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
