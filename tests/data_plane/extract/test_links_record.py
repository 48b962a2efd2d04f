"""The links of a record: the shared parser's, with skipped anchors counted by the extractor."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from dualplane.data_plane.extract.links import extract_links

pytestmark = pytest.mark.unit


def _skipped(scheme: str) -> float:
    return REGISTRY.get_sample_value("dualplane_extract_skipped_links_total", {"scheme": scheme}) or 0.0


def test_record_links_come_from_the_shared_parser_and_skips_are_counted() -> None:
    before = _skipped("javascript"), _skipped("mailto")
    html = """<a href="/a">A</a> <a href="javascript:void(0)">js</a> <a href="javascript:void(0)">js</a>
      <a href="mailto:x@y.z">mail</a> <a href="b" rel="ugc">B</a>"""

    links = extract_links(html, "http://shop.example/dir/page")

    assert [(link.url, link.nofollow, link.text) for link in links] == [
        ("http://shop.example/a", False, "A"),
        ("http://shop.example/dir/b", True, "B"),
    ]
    assert (_skipped("javascript") - before[0], _skipped("mailto") - before[1]) == (2, 1)
