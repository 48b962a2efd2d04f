"""A sample site that changes over time: products change by time step, pages answer 304 when unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from dualplane.sample_site import Changes, SampleSite, SiteSpec
from dualplane.sample_site.changes import CatalogAt, not_modified, offer
from dualplane.sample_site.exceptions import SampleSiteError
from tests.support.clock import ManualClock

pytestmark = pytest.mark.unit

START_S = 1_800_000_000.0
PERIOD_S = 60.0
CHANGING = SiteSpec(seed=3, hosts=1, pages_per_host=40, latency_ms=0, changes=Changes(PERIOD_S, share=0.2))
DATE = "Fri, 15 Jan 2027 08:00:00 GMT"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_S)


@pytest.fixture
def site(clock: ManualClock) -> Iterator[SampleSite]:
    with SampleSite(CHANGING, clock=clock) as running:
        yield running


def test_a_step_changes_about_its_share_of_products_and_every_change_moves_the_price() -> None:
    spec = SiteSpec(seed=5, hosts=1, pages_per_host=1000, base_port=20000, changes=Changes(60, share=0.1))
    assert spec.changes is not None
    first, second = CatalogAt(spec, spec.changes, 0), CatalogAt(spec, spec.changes, 1)

    changed = [i for i in range(1000) if offer(first.product(0, i)) != offer(second.product(0, i))]

    assert 70 <= len(changed) <= 130  # 10 % of 1000, drawn
    assert all(first.product(0, i).price != second.product(0, i).price for i in changed)
    assert all(first.product(0, i).slug == second.product(0, i).slug for i in range(1000))


def test_steps_come_from_the_epoch_and_period() -> None:
    changes = Changes(period_s=60, share=0.1, epoch_s=START_S)

    assert [changes.step(START_S + s) for s in (-5, 0, 59.9, 60, 185)] == [0, 0, 0, 1, 3]
    assert changes.modified_at(2) == datetime.fromtimestamp(START_S + 120, UTC)
    with pytest.raises(SampleSiteError, match="period_s"):
        Changes(period_s=0.5)
    with pytest.raises(SampleSiteError, match="share"):
        Changes(share=0)


@pytest.mark.parametrize(
    ("if_none_match", "if_modified_since", "expected"),
    [
        ('"abc"', None, True),
        ('W/"abc"', None, True),  # If-None-Match compares weakly
        ('"x", "abc"', None, True),
        ("*", None, True),
        ('"x"', DATE, False),  # If-None-Match decides when present
        (None, DATE, True),
        (None, "Fri, 15 Jan 2027 07:59:59 GMT", False),
        (None, "not a date", False),
        (None, None, False),
    ],
)
def test_not_modified_follows_rfc_9110(
    if_none_match: str | None, if_modified_since: str | None, expected: bool
) -> None:
    headers = {"ETag": '"abc"', "Last-Modified": DATE}

    assert not_modified(headers, if_none_match, if_modified_since) is expected


def test_validators_of_the_first_visit_get_304_exactly_for_the_pages_that_did_not_change(
    site: SampleSite, clock: ManualClock
) -> None:
    urls = sorted(site.reachable_urls())
    with httpx.Client(timeout=5) as client:
        first = {url: client.get(url).headers for url in urls}
        clock.now_s += PERIOD_S
        by_etag = {url: client.get(url, headers={"If-None-Match": first[url]["etag"]}) for url in urls}
        by_date = {
            url: client.get(url, headers={"If-Modified-Since": first[url]["last-modified"]}).status_code
            for url in urls
        }

    changed = site.changed_pages(START_S, clock.now_s)
    products = site.changed_products(START_S, clock.now_s)
    assert products and products <= changed < set(urls)
    assert {url for url, response in by_etag.items() if response.status_code == 200} == changed
    assert {url for url, response in by_etag.items() if response.status_code == 304} == set(urls) - changed
    assert {url for url, status in by_date.items() if status == 200} == changed
    unchanged = by_etag[min(set(urls) - changed)]
    assert unchanged.content == b"" and unchanged.headers["etag"] == first[min(set(urls) - changed)]["etag"]


def test_the_sitemap_says_when_each_product_last_changed(site: SampleSite, clock: ManualClock) -> None:
    clock.now_s += 3 * PERIOD_S
    with httpx.Client(timeout=5) as client:
        sitemap = client.get(site.urls[0] + "/sitemap.xml").text

    changed = site.changed_products(START_S, clock.now_s)
    assert changed
    for url in changed:
        entry = sitemap.split(f"<loc>{url}</loc>", 1)[1].split("</url>", 1)[0]
        lastmod = datetime.fromisoformat(entry.removeprefix("<lastmod>").removesuffix("</lastmod>"))
        assert START_S < lastmod.timestamp() <= clock.now_s


def test_a_site_without_changes_sends_no_validators_and_never_304() -> None:
    with (
        SampleSite(SiteSpec(seed=3, hosts=1, pages_per_host=5, latency_ms=0)) as site,
        httpx.Client(timeout=5) as client,
    ):
        response = client.get(site.seeds[0], headers={"If-None-Match": "*"})
        with pytest.raises(SampleSiteError, match="changes"):
            site.changed_pages(0, 1)

    assert response.status_code == 200 and "etag" not in response.headers


def test_changes_endpoint_says_what_changed_between_two_times(site: SampleSite, clock: ManualClock) -> None:
    clock.now_s += PERIOD_S
    with httpx.Client(timeout=5) as client:
        answer = client.get(f"{site.urls[0]}/_changes", params={"since": START_S}).json()
        refused = client.get(f"{site.urls[0]}/_changes").status_code

    assert (answer["since_step"], answer["until_step"]) == (0, 1)
    assert set(answer["pages"]) == site.changed_pages(START_S, clock.now_s)
    assert set(answer["products"]) == site.changed_products(START_S, clock.now_s)
    assert refused == 400
