"""render: auto: a domain renders only when a sampled page showed more rendered (fakes: pure logic)."""

from __future__ import annotations

import pytest

from dualplane.control_plane.fetcher.backends import adaptive
from dualplane.control_plane.fetcher.backends.adaptive import SAMPLES, AdaptiveBackend
from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.exceptions import FetchTimeout
from dualplane.control_plane.fetcher.render_need import render_need, shown

pytestmark = [pytest.mark.unit, pytest.mark.anyio]

PRICED = '<div class="price-box"><span class="price">€12.50</span></div><p>A fine pair of boots.</p>'
EMPTY_BOX = '<div class="price-box" data-product="boots"></div><p>A fine pair of boots.</p>'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def page(url: str, body: str, content_type: str = "text/html") -> FetchResponse:
    html = f"<html><body>{body}</body></html>".encode()
    return FetchResponse(url, url, 200, {}, html, (), 1.0, content_type, "utf-8")


class Site(FetchBackend):
    """Direct answers: the script shop's price box is empty; the other shop's is filled."""

    def __init__(self) -> None:
        self.fetched = 0

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        self.fetched += 1
        if request.url.endswith(".pdf"):
            return page(request.url, "%PDF", "application/pdf")
        return page(request.url, EMPTY_BOX if "script.shop" in request.url else PRICED)

    async def aclose(self) -> None:
        pass


class Browser:
    """Renders a page: the script shop's price box gets its price."""

    def __init__(self) -> None:
        self.rendered: list[str] = []

    async def render(self, request: FetchRequest, response: FetchResponse, started: float) -> FetchResponse:
        self.rendered.append(request.url)
        return page(request.url, PRICED)


def request(url: str) -> FetchRequest:
    return FetchRequest(url=url, user_agent="ours", connect_timeout_s=1, read_timeout_s=1, max_bytes=10**6)


async def test_a_static_shop_is_sampled_then_fetched_directly_and_sampled_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(adaptive, "RESAMPLE_EVERY", 20)
    browser = Browser()
    backend = AdaptiveBackend(Site(), browser)

    for i in range(SAMPLES + 20):
        await backend.fetch(request(f"http://plain.shop/p/{i}"))
    await backend.fetch(request("http://plain.shop/manual.pdf"))

    assert len(browser.rendered) == SAMPLES + 1  # the samples, and one again 20 pages later
    assert not backend.verdicts["plain.shop"].renders


async def test_a_script_shop_renders_every_page_once_a_sample_showed_the_price() -> None:
    site, browser = Site(), Browser()
    backend = AdaptiveBackend(site, browser)

    answers = [await backend.fetch(request(f"http://script.shop/p/{i}")) for i in range(10)]

    assert len(browser.rendered) == 10 and site.fetched == 10  # rendered from the one direct answer
    assert all(b"12.50" in answer.body for answer in answers)
    assert backend.verdicts["script.shop"].renders


def test_the_rule_names_what_rendering_shows_and_ignores_small_changes() -> None:
    assert render_need(shown(EMPTY_BOX), shown(PRICED)) == "rendering shows 2 more price data"
    assert render_need(shown(PRICED), shown(PRICED + "<div>cookie banner</div>")) is None
    shell, built = "<div id=app></div>", "<p>" + "Script-built text. " * 60 + "</p>"
    assert (
        render_need(shown(shell), shown(built))
        == "rendering shows 1139 characters of text where the HTML has 0"
    )


class Failing(Browser):
    async def render(self, request: FetchRequest, response: FetchResponse, started: float) -> FetchResponse:
        self.rendered.append(request.url)
        raise FetchTimeout(f"{request.url}: the browser did not load the page in time")


async def test_a_sample_the_browser_cannot_render_keeps_the_direct_page_and_counts_as_nothing_more() -> None:
    browser = Failing()
    backend = AdaptiveBackend(Site(), browser)

    answers = [await backend.fetch(request(f"http://slow.shop/p/{i}")) for i in range(SAMPLES + 5)]

    assert all(answer.status == 200 for answer in answers) and len(browser.rendered) == SAMPLES
    assert not backend.verdicts["slow.shop"].renders
