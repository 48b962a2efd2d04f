"""A faceted shop host: filter links and endless trap pages, none of them in the site's truth."""

from __future__ import annotations

import pytest

from dualplane.sample_site import SiteSpec
from dualplane.sample_site.reachability import reachable_urls
from dualplane.sample_site.routes import SiteModel

pytestmark = pytest.mark.unit

SPEC = SiteSpec(seed=5, hosts=3, pages_per_host=6, base_port=20_000, faceted_hosts=(0,))


def test_listings_link_filters_and_the_traps_lead_on_for_ever() -> None:
    model = SiteModel(SPEC)
    origin = SPEC.origin(0)

    listing = model.resolve(0, "/products", "page=1&color=red")
    month = model.resolve(0, "/events/2026-12")
    browse = model.resolve(0, "/browse/all/all/")

    assert listing.status == month.status == browse.status == 200
    assert f"{origin}/products?page=1&color=red&size=m" in listing.links
    assert f"{origin}/events/2027-01" in month.links and f"{origin}/events/2026-11" in month.links
    assert f"{origin}/browse/all/all/all/" in browse.links
    assert model.resolve(0, "/products", "page=1&color=pink").status == 404
    assert model.resolve(1, "/browse/").status == 404  # other hosts have no traps


def test_the_site_a_crawl_must_fetch_whole_leaves_the_traps_out() -> None:
    plain = SiteSpec(seed=5, hosts=3, pages_per_host=6, base_port=20_000)

    assert reachable_urls(SPEC) == reachable_urls(plain)
