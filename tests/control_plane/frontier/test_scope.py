"""Scope rules: depth, allowed domains (with subdomains and ports), allow and deny patterns."""

from __future__ import annotations

import pytest

from dualplane.control_plane.frontier.scope import ScopeDecision, ScopeRules

pytestmark = pytest.mark.unit


def test_empty_rules_admit_everything() -> None:
    assert ScopeRules().check("https://anything.example/x", depth=99) == ScopeDecision(True, "in scope")


def test_depth_beyond_max_depth_is_rejected() -> None:
    rules = ScopeRules(max_depth=3)

    assert rules.check("https://example.com/", depth=3).allowed
    assert rules.check("https://example.com/", depth=4) == ScopeDecision(False, "depth 4 exceeds max_depth 3")


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://example.com/", True),
        ("https://shop.example.com/cart", True),
        ("http://example.com:8080/", True),
        ("https://notexample.com/", False),
        ("https://example.com.evil.com/", False),
        ("http://127.0.0.1:8101/page", True),
        ("http://127.0.0.1:8102/page", False),
        ("http://127.0.0.1/page", False),
    ],
)
def test_allowed_domains_admit_subdomains_and_match_ports(url: str, allowed: bool) -> None:
    rules = ScopeRules(allowed_domains=frozenset({"Example.com", "127.0.0.1:8101"}))

    assert rules.check(url, depth=0).allowed is allowed


def test_domain_rejection_names_the_domain() -> None:
    rules = ScopeRules(allowed_domains=frozenset({"example.com"}))

    assert rules.check("https://evil.com/x", depth=0).reason == "domain evil.com not in allowed domains"


def test_deny_wins_over_allow() -> None:
    rules = ScopeRules(allow_patterns=(r"/account",), deny_patterns=(r"/logout",))

    assert rules.check("https://example.com/account/logout", depth=1) == ScopeDecision(
        False, "matches deny pattern '/logout'"
    )
    assert rules.check("https://example.com/account/orders", depth=1) == ScopeDecision(
        True, "matches allow pattern '/account'"
    )


def test_allow_patterns_must_match_when_given() -> None:
    rules = ScopeRules(allow_patterns=(r"/products/\d+$", r"/category/"))

    assert rules.check("https://example.com/products/42", depth=1).allowed
    assert rules.check("https://example.com/about", depth=1) == ScopeDecision(
        False, "matches no allow pattern"
    )


def test_patterns_are_searched_in_the_whole_url() -> None:
    rules = ScopeRules(deny_patterns=(r"[?&]sessionid=",))

    assert not rules.check("https://example.com/a?page=2&sessionid=9", depth=0).allowed
    assert rules.check("https://example.com/a?page=2", depth=0).allowed


def test_invalid_pattern_raises_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"invalid deny pattern '\(unclosed'"):
        ScopeRules(deny_patterns=("(unclosed",))


def test_invalid_url_is_out_of_scope_with_the_reason() -> None:
    decision = ScopeRules().check("ftp://example.com/file", depth=0)

    assert not decision.allowed
    assert decision.reason == "invalid URL: not an http(s) URL: 'ftp://example.com/file'"


def test_rules_are_frozen_and_comparable() -> None:
    rules = ScopeRules(deny_patterns=("/logout",), max_depth=2)

    assert rules == ScopeRules(deny_patterns=("/logout",), max_depth=2)
    with pytest.raises(AttributeError):
        rules.max_depth = 3  # type: ignore[misc]
