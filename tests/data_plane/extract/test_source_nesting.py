"""The nesting guard's pre-test (counting ``<``) agrees with the tag scan it spares."""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.source import nesting_depth, too_deep

pytestmark = pytest.mark.unit
LIMIT = 50


@pytest.mark.parametrize(
    "html",
    [
        "<div>" * LIMIT,  # as deep as allowed, every "<" a start tag: the count alone settles it
        "<div>" * (LIMIT + 1),  # one deeper
        "<div></div>" * (LIMIT * 3),  # many tags, shallow: the scan runs and finds it shallow
        "<p>" + "<b>x</b>" * LIMIT + "<div>" * (LIMIT + 1),  # other tags count for the pre-test only
        "<section>" * (LIMIT + 5) + "</section>" * (LIMIT + 5),
        "",
    ],
)
def test_too_deep_agrees_with_the_full_scan(html: str) -> None:
    depth = nesting_depth(html)
    assert too_deep(html, LIMIT) == (depth if depth > LIMIT else None)
