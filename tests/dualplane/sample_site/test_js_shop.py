"""A script-drawn shop host: its product pages say price and stock only through its JSON endpoint."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlsplit

import pytest

from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record
from dualplane.sample_site import SampleSiteError, SiteModel, SiteSpec, ground_truth
from dualplane.sample_site.js_shop import SCRIPT_PATH

pytestmark = pytest.mark.unit

SPEC = SiteSpec(seed=11, hosts=3, pages_per_host=12, base_port=20000, js_hosts=(0,))
MODEL = SiteModel(SPEC)


def test_product_pages_of_a_js_host_carry_no_price_until_the_script_runs() -> None:
    for truth in [
        product for product in ground_truth(SPEC).products if product.url.startswith(SPEC.origin(0))
    ]:
        path = urlsplit(truth.url).path
        body = MODEL.resolve(0, path).body
        page = raw_page(body, truth.url, fetched_at=datetime(2024, 6, 1, tzinfo=UTC), charset="utf-8")
        product = extract_record(page)["product"]

        item = json.loads(MODEL.resolve(0, f"/api/products/{path.rsplit('/', 1)[1]}.json").body)
        assert SCRIPT_PATH.encode() in body and b"application/ld+json" not in body
        assert product is None or product["price"] is None, truth.url
        assert (Decimal(item["price"]), item["currency"]) == (Decimal(truth.price), truth.currency)


def test_other_hosts_are_unchanged_and_serve_no_script() -> None:
    plain = SiteModel(SiteSpec(seed=11, hosts=3, pages_per_host=12, base_port=20000))
    for path in ("/", "/products?page=1"):
        for host in (1, 2):
            assert MODEL.resolve(host, *path.split("?")).body == plain.resolve(host, *path.split("?")).body
    assert MODEL.resolve(1, SCRIPT_PATH).status == 404 and MODEL.resolve(0, SCRIPT_PATH).status == 200
    assert MODEL.resolve(0, "/api/products/no-such-thing.json").status == 404


def test_js_hosts_must_exist() -> None:
    with pytest.raises(SampleSiteError, match="js_hosts"):
        SiteSpec(hosts=2, js_hosts=(2,))
