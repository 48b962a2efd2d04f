"""A profile's site scope: trap limits, patterns, budgets, and its round trip through the profile JSON."""

from __future__ import annotations

import re

import pytest

from dualplane.control_plane.fetcher.profiles import Profile
from dualplane.core.web.site_scope import SiteScope, budget_of

pytestmark = pytest.mark.unit


def test_an_empty_scope_admits_everything() -> None:
    assert SiteScope().empty
    assert SiteScope().rejection("http://shop.example/a/a/a/?x=1&y=2&z=3", depth=99) is None


@pytest.mark.parametrize(
    ("url", "depth", "reason"),
    [
        ("http://shop.example/products?page=1&color=red", 1, None),
        ("http://shop.example/products?color=red&page=1&size=m", 1, "3 query parameters, more than 2"),
        ("http://shop.example/all/all/products", 1, None),
        ("http://shop.example/all/all/all/products", 1, "a path segment repeated more than 2 times"),
        ("http://shop.example/" + "x" * 80, 1, "URL longer than 80 characters"),
        ("http://shop.example/events/2031-01", 5, "depth 5 beyond the profile's max_depth 4"),
        ("http://shop.example/cart", 1, "matches the profile's deny pattern '/cart'"),
        ("http://shop.example/about", 1, "matches none of the profile's allow patterns"),
    ],
)
def test_each_trap_limit_and_pattern_names_its_reason(url: str, depth: int, reason: str | None) -> None:
    scope = SiteScope(
        allow=(r"/(products|all|events|cart|x)",),
        deny=("/cart",),
        max_query_params=2,
        max_repeated_segments=2,
        max_url_length=80,
        max_depth=4,
    )

    assert scope.rejection(url, depth) == reason


def test_the_tightest_budget_wins_and_none_means_no_budget() -> None:
    assert budget_of(None, None) is None
    assert budget_of(40, None) == 40
    assert budget_of(40, 25) == 25


@pytest.mark.parametrize(
    ("fields", "complaint"),
    [
        ({"page_budget": 0}, "page_budget must be a whole number >= 1"),
        ({"max_query_params": -1}, "max_query_params must be a whole number >= 0"),
        ({"deny": ("(",)}, "deny pattern '(' is not a regular expression"),
    ],
)
def test_bad_limits_are_refused_by_name(fields: dict[str, object], complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)):
        SiteScope(**fields)  # type: ignore[arg-type]


def test_a_profile_stores_only_the_limits_set_and_reads_them_back() -> None:
    profile = Profile("facets", ("facets.example",), scope=SiteScope(page_budget=40, deny=("/cart",)))

    assert profile.public()["scope"] == {"page_budget": 40, "deny": ["/cart"]}
    assert Profile.from_json(profile.to_json()) == profile
    assert Profile.from_json(Profile("plain", ("p.example",)).to_json()).scope.empty
