"""Consent and login hosts: gated until the right cookie, which only the right form post sets."""

from __future__ import annotations

import pytest

from dualplane.sample_site import SiteSpec
from dualplane.sample_site.sessions import PASSWORD, REGION, SESSION, USER, gate, post

pytestmark = pytest.mark.unit

SPEC = SiteSpec(seed=3, hosts=3, pages_per_host=4, consent_hosts=(0,), login_hosts=(2,))


def test_a_consent_host_sends_pages_to_its_form_until_the_region_cookie_comes() -> None:
    assert gate(SPEC, 0, "/product/x-0", {}) == "/consent?next=/product/x-0"
    assert gate(SPEC, 0, "/product/x-0", {"region": "fr"}) == "/consent?next=/product/x-0"
    assert gate(SPEC, 0, "/product/x-0", {"region": REGION}) is None
    assert gate(SPEC, 0, "/robots.txt", {}) is None and gate(SPEC, 1, "/product/x-0", {}) is None
    assert post(SPEC, 0, "/consent", {"region": REGION})[1]["Set-Cookie"].startswith(f"region={REGION};")
    assert post(SPEC, 0, "/consent", {"region": "fr"}) == (400, {})


def test_a_login_host_wants_a_signed_in_session_for_its_products() -> None:
    assert gate(SPEC, 2, "/product/x-0", {}) == "/login?next=/product/x-0"
    assert gate(SPEC, 2, "/products?page=1", {}) is None
    assert gate(SPEC, 2, "/product/x-0", {"session": SESSION}) is None
    assert post(SPEC, 2, "/login", {"user": USER, "password": "guess"}) == (400, {})
    assert post(SPEC, 2, "/login", {"user": USER, "password": PASSWORD})[1]["Set-Cookie"].startswith(
        f"session={SESSION};"
    )
