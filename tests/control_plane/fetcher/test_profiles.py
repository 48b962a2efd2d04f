"""Fetch profiles: validation, matching by the most specific pattern, what they change on a request."""

from __future__ import annotations

import pytest

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.profiles import Profile, ProfileBook, ProfileError, match

pytestmark = pytest.mark.unit


def test_the_most_specific_pattern_wins_whatever_the_order() -> None:
    every = Profile("every", ("*",))
    shops = Profile("shops", ("*.shop.example",), backend="browser")
    one = Profile("one", ("eu.shop.example",), backend="direct")
    for order in ([every, shops, one], [one, shops, every]):
        assert match(order, "eu.shop.example") is one
        assert match(order, "us.shop.example") is shops
        assert match(order, "news.example") is every
    assert match([shops], "shop.example") is None


def test_equal_patterns_pick_the_first_name() -> None:
    b, a = Profile("b", ("x.example",)), Profile("a", ("x.example",))
    assert match([b, a], "x.example") is a and match([a, b], "x.example") is a


def test_a_profile_sets_user_agent_and_headers_on_the_request() -> None:
    request = FetchRequest(
        url="http://x.example/", user_agent="ours", connect_timeout_s=1, read_timeout_s=1, max_bytes=10
    )
    profile = Profile("p", ("x.example",), user_agent="theirs", headers={"Accept-Language": "de"})

    changed = profile.apply(request)

    assert changed.user_agent == "theirs" and changed.headers == {"Accept-Language": "de"}
    assert Profile("q", ("x.example",)).apply(request) is request


def test_header_values_never_leave_in_public_output_and_survive_a_round_trip() -> None:
    profile = Profile(
        "login",
        ("x.example",),
        headers={"Cookie": "session=s3cret"},
        wait_selector=".price",
        proxies=("http://user:pr0xypass@proxy.example:3128",),
    )

    assert "s3cret" not in str(profile.public()) and profile.public()["headers"] == ["Cookie"]
    assert "pr0xypass" not in str(profile.public())
    assert Profile.from_json(profile.to_json()) == profile


@pytest.mark.parametrize(
    ("fields", "complaint"),
    [
        ({"name": "Bad Name"}, "profile name"),
        ({"domains": ()}, "at least one domain"),
        ({"domains": ("Shop.Example",)}, "lower-case"),
        ({"backend": "cloud"}, "backend must be"),
        ({"country": "DE"}, "only for backend api"),
        ({"backend": "api", "country": "de"}, "two capital letters"),
        ({"proxies": ("ftp://proxy.example",)}, "proxies"),
        ({"backend": "api", "proxies": ("http://proxy.example:3128",)}, "its own proxies"),
        ({"wait_s": 0}, "wait_s"),
        ({"headers": {"User-Agent": "x"}}, "cannot be set"),
        ({"headers": {"X-A": "a\r\nInjected: yes"}}, "cannot be set"),
    ],
)
def test_bad_profiles_are_refused_with_the_field_named(fields: dict[str, object], complaint: str) -> None:
    arguments: dict[str, object] = {"name": "p", "domains": ("x.example",), **fields}
    with pytest.raises(ProfileError, match=complaint):
        Profile(**arguments)  # type: ignore[arg-type]


def test_an_unreadable_stored_profile_is_a_profile_error() -> None:
    with pytest.raises(ProfileError, match="unreadable"):
        Profile.from_json(b'{"name": "p"}')


def test_a_book_remembers_matches_until_its_profiles_change() -> None:
    book = ProfileBook([Profile("all", ("*.example",))])
    assert (first := book.match("a.example")) is not None and first.name == "all"

    book.put(Profile("a", ("a.example",)))
    assert (found := book.match("a.example")) is not None and found.name == "a"
    book.remove("a")
    assert (back := book.match("a.example")) is not None and back.name == "all"
    book.remove("all")
    assert book.match("a.example") is None and book.match("b.example") is None


def test_a_refused_proxy_is_named_without_its_password() -> None:
    with pytest.raises(ProfileError, match="proxies") as refused:
        Profile("p", ("x.example",), proxies=("ftp://user:pr0xypass@proxy.example:21",))
    assert "pr0xypass" not in str(refused.value)
