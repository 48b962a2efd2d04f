"""Links of messy real-world HTML, and the fast href resolver against urljoin, case by case and fuzzed."""

from __future__ import annotations

from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dualplane.core.web.links import page_links, resolver
from dualplane.core.web.urls import without_credentials

pytestmark = pytest.mark.unit


def reference(href: str, base: str) -> tuple[str | None, str | None]:
    """What a link means, by the book: ``urldefrag(urljoin(base, href))``, http(s) only, no credentials."""
    if not href or href.startswith("#"):
        return None, None
    try:
        url = urldefrag(urljoin(base, href)).url
        scheme = urlsplit(url).scheme
    except ValueError:
        return None, None
    if scheme not in ("http", "https"):
        return None, scheme.lower()
    return without_credentials(url), None


def test_links_are_absolute_deduplicated_and_crawlable_only() -> None:
    html = """<html><body>
      <a href="/a">A</a> <a href=" b?x=1 ">B</a> <a href="/a#frag">A again</a>
      <a href="javascript:void(0)">js</a> <a href="mailto:x@y.z">mail</a> <a href="#top">top</a>
      <a href="https://other.example/c" rel="nofollow noopener">C</a>
      <a href="http://[bad">broken</a> <a href="JavaScript:go()">js again</a>
      <a href="https://user:secret@shop.example/private">with credentials</a>
    </body></html>"""

    found = page_links(html, "http://shop.example/dir/page")

    assert [link.url for link in found.links] == [
        "http://shop.example/a",
        "http://shop.example/dir/b?x=1",
        "https://other.example/c",
        "https://shop.example/private",
    ]
    assert found.links[2].nofollow is True and found.links[2].rel == "nofollow noopener"
    assert found.links[0].text == "A" and found.links[0].nofollow is False
    assert found.skipped == {"javascript": 2, "mailto": 1}
    assert found.followed() == [found.links[i].url for i in (0, 1, 3)]
    assert len(found.followed(follow_nofollow=True)) == 4


def test_base_href_and_meta_nofollow_are_honoured() -> None:
    html = '<head><base href="http://cdn.example/root/">'
    html += '<meta name="robots" content="noindex, nofollow"></head><body><a href="x">x</a></body>'

    found = page_links(html, "http://shop.example/page")

    assert found.links[0].url == "http://cdn.example/root/x"
    assert found.links[0].nofollow is True
    assert found.followed() == []


@pytest.mark.parametrize("rel", ["ugc", "sponsored", "NoFollow", "external nofollow"])
def test_ugc_and_sponsored_links_are_nofollow_too(rel: str) -> None:
    found = page_links(
        f'<a href="/x" rel="{rel}">x</a><a href="/y" rel="external">y</a>', "http://s.example/"
    )

    assert [link.nofollow for link in found.links] == [True, False]


def test_broken_html_still_yields_links() -> None:
    html = "<div><a href='/one'>one<p><a href=/two>two</div></td></table><a href=\"/three\""

    assert [link.url for link in page_links(html, "http://s.example/").links][:2] == [
        "http://s.example/one",
        "http://s.example/two",
    ]


def test_bytes_and_no_text() -> None:
    found = page_links(b"<a href='caf\xc3\xa9'>menu</a>", "https://s.example/a/b", texts=False)

    assert found.links[0].url == "https://s.example/a/caf\u00e9" and found.links[0].text is None


TRICKY_BASES = [
    "http://a.example/b/c/d;p?q",
    "https://a.example",
    "https://a.example/",
    "https://a.example/dir//sub/page.html?x=1#top",
    "https://a.example/x/../y/./z",
    "http://user:pw@a.example:8080/p/",
    "http://[::1]:8080/p/q",
    "HTTP://A.example/Up/",
    "ftp://files.example/pub/",
    "https://a.example/caf\u00e9/",
]
TRICKY_HREFS = [
    "g", "./g", "g/", "/g", "//g", "?y", "g?y", "#s", "g#s", "g?y#s", ";x", "g;x", "g;x?y#s", "", ".", "./",
    "..", "../", "../g", "../..", "../../g", "../../../g", "/./g", "/../g", "g.", ".g", "g..", "..g",
    "./../g", "./g/.", "g/./h", "g/../h", "g;x=1/./y", "g;x=1/../y", "g?y/./x", "g?y/../x", "g#s/./x",
    "http:g", "http:", "http://", "https://", "//", "///x", "http:///x", "https://b.example",
    "http://b.example?q", "http://b.example/p?", "http://b.example/p#", "http://b.example/p;",
    "https://b.example/a/../b", "//b.example/./c", "https://[::1]/x", "http://[bad/x", "http://b]/",
    "HTTPS://B.example/X", "hTtp://b.example/", "javascript:void(0)", "JavaScript:x", "mailto:a@b.c",
    "tel:+1", "data:text/html,hi", "ftp://f.example/", "a:b", "1:b", "a/b:c", "g?", "?", "?#x",
    "g\\h", "\\\\g\\h", "/a//b", "a//b", "a/b/", "https://u:p@b.example/x", "//u:p@b.example/",
    "x@y/z", "/caf\u00e9", "//b\u00e9.example/", "g\th", "g\nh", " g", "g ", "\x01g", "g\x7fh",
    "https://b.example:99999/", "https://b.example:port/", "?a=1&b=2/..", "/p?q=/./",
    "https://b.example/\u00e9?\u00e9#\u00e9", "//[::1]:80/x", "/\u3000x", "g\u00a0h",
    # a documentation generator's links between its pages: dot segments first, then a plain path
    "../../reference/a.html?q=1#m", "./a/./b", "../a:b", "./.g", "../g/", "../../../../../g", "./../x/y",
    "../g ", "..//g", "../g/..", "../g/.", ".././g", "../g;p", "../g?",
]  # fmt: skip


@pytest.mark.parametrize("base", TRICKY_BASES)
def test_the_fast_resolver_agrees_with_urljoin_on_tricky_cases(base: str) -> None:
    resolve = resolver(base)

    for href in TRICKY_HREFS:
        assert resolve(href) == reference(href, base), (href, base)


PIECES = st.sampled_from([
    "http:", "https:", "HTTP:", "ftp:", "mailto:", "javascript:", "//", "/", "///", "\\", "?", "#", ";", "=",
    "&", ".", "..", "./", "../", "/..", "/.", "@", ":", "u:p@", "a", "b.example", "[::1]", "[", "]", "%2e",
    "%", " ", "\t", "\n", "\x00", "\u00e9", "\u00a0", "80", "x", "~", "index.html", "+", "-",
])  # fmt: skip
# Mostly the shapes of real links (the fast paths), with odd pieces in between; and pure noise.
REAL_HREFS = st.builds(
    lambda start, path, query, fragment: f"{start}{path}{query}{fragment}",
    st.sampled_from(["", "/", "//b.example/", "http://b.example/", "https://a.example", "?", "./", "../"]),
    st.lists(
        st.sampled_from(["a", "b/", "c.html", "/", ".", "..", "\u00e9", "x:y", "%20", "@"]), max_size=5
    ).map("".join),
    st.sampled_from(["", "?", "?q=1", "?a=/./b", "?x=1;y"]),
    st.sampled_from(["", "#", "#f", "#f?g"]),
)
HREFS = REAL_HREFS | st.lists(PIECES, max_size=8).map("".join) | st.text(max_size=12)
BASES = st.builds(
    lambda scheme, host, path, tail: f"{scheme}://{host}{path}{tail}",
    st.sampled_from(["http", "https", "https", "HTTP", "ftp"]),
    st.sampled_from(["a.example", "a.example", "u:p@a.example:81", "[::1]", "A.Example", "b\u00e9.example"])
    | st.just(""),
    st.sampled_from(["", "/", "/x/", "/x/y.html", "/x/y/"])
    | st.lists(st.sampled_from(["/", "x", "..", ".", "//", ";p", "\u00e9", "y.html"]), max_size=6).map(
        "".join
    ),
    st.sampled_from(["", "?q=1", "#f", "?", ";p?q#f", "\t"]),
)


@settings(max_examples=2500, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(href=HREFS, base=BASES)
@example(href="../g", base="http://a.example/b/c/d;p?q")
@example(href="http://b.example/p?", base="https://a.example/")
def test_the_fast_resolver_always_agrees_with_urljoin(href: str, base: str) -> None:
    assert resolver(base)(href.strip()) == reference(href.strip(), base)
