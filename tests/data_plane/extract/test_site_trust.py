"""A host's later pages are read by resiliparse alone once its first pages agreed with trafilatura's text;
checked again now and then, sent back by one disagreement, given up on where they keep disagreeing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from selectolax.lexbor import LexborHTMLParser

from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import Extraction, extract_record
from dualplane.data_plane.extract.text.site_trust import SiteTrust, layout_of, token_f1

pytestmark = pytest.mark.unit

AGREE = "alpha beta gamma delta epsilon zeta eta theta iota kappa"


class Engines:
    """Fake engines: what each returns for the next page, and how often each was called."""

    def __init__(self, full: str | None = AGREE, fast: str | None = AGREE) -> None:
        self.full_text, self.fast_text = full, fast
        self.full_calls = self.fast_calls = 0

    def full(self) -> str | None:
        self.full_calls += 1
        return self.full_text

    def fast(self) -> str | None:
        self.fast_calls += 1
        return self.fast_text


def read(trust: SiteTrust, engines: Engines, pages: int, host: str = "docs.example") -> list[str | None]:
    return [trust.text(host, engines.full, engines.fast) for _ in range(pages)]


def test_token_f1() -> None:
    assert token_f1("a b c d", "a b c d") == 1.0
    assert token_f1("a b", "c d") == 0.0
    assert token_f1("", "") == 1.0
    assert token_f1("a b c d", "a b c e") == pytest.approx(0.75)
    assert token_f1("a a b", "a b b") == pytest.approx(2 / 3)  # words counted with repeats


def test_trusted_after_agreeing_pages_then_checked_every_nth_page() -> None:
    trust, engines = SiteTrust(agree_pages=3, check_every=4), Engines()
    read(trust, engines, 1)
    assert (engines.full_calls, engines.fast_calls) == (1, 0)  # a host's first page: trafilatura alone
    read(trust, engines, 3)
    assert (engines.full_calls, engines.fast_calls) == (4, 3)  # both engines on the next pages
    assert trust.trusted("docs.example")
    read(trust, engines, 3)
    assert (engines.full_calls, engines.fast_calls) == (4, 6)  # resiliparse alone
    read(trust, engines, 1)
    assert (engines.full_calls, engines.fast_calls) == (5, 7)  # the 4th page is checked by both
    assert not trust.trusted("other.example")


def test_one_disagreement_sends_the_host_back_to_trafilatura() -> None:
    trust, engines = SiteTrust(agree_pages=2, check_every=3), Engines()
    read(trust, engines, 3)
    assert trust.trusted("docs.example")
    engines.fast_text = "a different template"
    texts = read(trust, engines, 3)  # two pages by resiliparse alone, the third checked
    assert texts == ["a different template", "a different template", AGREE]
    assert not trust.trusted("docs.example")
    assert read(trust, engines, 1) == [AGREE]  # trafilatura's text, compared again
    assert engines.full_calls == 5


def test_a_host_that_keeps_disagreeing_is_checked_only_now_and_then() -> None:
    trust, engines = SiteTrust(give_up=2, check_every=5), Engines(fast="menus and footers only")
    assert read(trust, engines, 13) == [AGREE] * 13
    # the first page alone, two compared, then pages 8 and 13 (every 5th): the second engine on 4 of 13
    assert (engines.full_calls, engines.fast_calls) == (13, 4)
    engines.fast_text = AGREE  # a checked page agrees: every page is compared until the host is trusted
    read(trust, engines, 5 + 3)
    assert trust.trusted("docs.example")


def test_trafilatura_reads_a_page_where_resiliparse_finds_nothing() -> None:
    trust, engines = SiteTrust(agree_pages=1), Engines()
    read(trust, engines, 2)
    engines.fast_text = None
    assert read(trust, engines, 1) == [AGREE]
    assert trust.trusted("docs.example")  # no comparison was made: nothing learned


def test_hosts_remembered_are_bounded_least_recently_read_first() -> None:
    trust, engines = SiteTrust(agree_pages=1, max_hosts=2), Engines()
    read(trust, engines, 2, "a.example")
    read(trust, engines, 2, "b.example")
    read(trust, engines, 1, "a.example")
    read(trust, engines, 2, "c.example")  # b was read least recently: forgotten
    assert [trust.trusted(host) for host in ("a.example", "b.example", "c.example")] == [True, False, True]


def test_pages_of_one_template_share_a_layout_whatever_their_text() -> None:
    def layout(body: str) -> str:
        return layout_of(LexborHTMLParser(f"<html><body>{body}<script>x()</script></body></html>"))

    page = layout("<div class='page post-12'><nav class=menu></nav><main><p>one</p><p>two</p></main></div>")
    same = layout("<div class='post-7 page'><nav class=menu></nav><main><table></table></main></div>")
    other = layout("<div class='page'><header></header><main><p>one</p></main></div>")
    assert page == same  # classes' digits, order, and what lies deeper do not count
    assert page != other


def _html(body: str) -> str:
    return (
        f"<html lang='en'><head><title>t</title></head><body><div class=doc><p>{body}</p></div></body></html>"
    )


def _page(url: str, body: str) -> dict[str, object]:
    html = _html(body)
    return raw_page(html.encode(), url, fetched_at=datetime(2026, 1, 1, tzinfo=UTC), charset="utf-8")


def test_the_service_extraction_learns_per_host_and_layout_and_leaves_other_routes_alone() -> None:
    words = " ".join(f"word{index}" for index in range(60))
    extraction = Extraction(sites=SiteTrust(agree_pages=2))
    records = [extraction(_page(f"https://notes.example/{index}", words)) for index in range(3)]
    # the first page alone, the next two compared and agreeing
    layout = layout_of(LexborHTMLParser(_html(words)))
    assert extraction.sites is not None and extraction.sites.trusted(f"notes.example {layout}")
    assert [record["text"] for record in records] == [words] * 3
    # a documentation page (route docs) is read by resiliparse anyway: nothing to learn from it
    sphinx = _page(
        "https://sphinx.example/", words.replace("word0", "<meta name=generator content='Sphinx 7'>")
    )
    extract_record(sphinx, sites=extraction.sites)
    assert not extraction.sites.trusted("sphinx.example")
    assert len(extraction.sites) == 1  # the documentation host was not even remembered


def test_a_page_whose_url_does_not_parse_is_extracted_all_the_same() -> None:
    words = " ".join(f"word{index}" for index in range(60))
    sites = SiteTrust()
    records = [extract_record(_page("http://[broken/page", words), sites=sites) for _ in range(5)]
    assert [record["text"] for record in records] == [words] * 5
