"""Link extraction from messy real-world HTML."""

from __future__ import annotations

import pytest

from data_plane.extract.links import extract_links

pytestmark = pytest.mark.unit


def test_links_are_absolute_deduplicated_and_crawlable_only() -> None:
    html = """<html><body>
      <a href="/a">A</a> <a href=" b?x=1 ">B</a> <a href="/a#frag">A again</a>
      <a href="javascript:void(0)">js</a> <a href="mailto:x@y.z">mail</a> <a href="#top">top</a>
      <a href="https://other.example/c" rel="nofollow noopener">C</a>
      <a href="http://[bad">broken</a>
    </body></html>"""

    links = extract_links(html, "http://shop.example/dir/page")

    assert [link.url for link in links] == [
        "http://shop.example/a",
        "http://shop.example/dir/b?x=1",
        "https://other.example/c",
    ]
    assert links[2].nofollow is True and links[2].rel == "nofollow noopener"
    assert links[0].text == "A" and links[0].nofollow is False


def test_base_href_and_meta_nofollow_are_honoured() -> None:
    html = '<head><base href="http://cdn.example/root/">'
    html += '<meta name="robots" content="noindex, nofollow"></head><body><a href="x">x</a></body>'

    links = extract_links(html, "http://shop.example/page")

    assert links[0].url == "http://cdn.example/root/x"
    assert links[0].nofollow is True


def test_broken_html_still_yields_links() -> None:
    html = "<div><a href='/one'>one<p><a href=/two>two</div></td></table><a href=\"/three\""

    assert [link.url for link in extract_links(html, "http://s.example/")][:2] == [
        "http://s.example/one",
        "http://s.example/two",
    ]
