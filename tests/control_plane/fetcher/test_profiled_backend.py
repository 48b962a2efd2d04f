"""ProfiledBackend: each fetch goes the way its domain's profile says (fake backends: pure routing)."""

from __future__ import annotations

import pytest

from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.backends.profiled import ProfiledBackend
from dualplane.control_plane.fetcher.profiles import Profile, match
from dualplane.core.web.ssrf import SsrfGuard

pytestmark = [pytest.mark.unit, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Recording(DirectBackend):
    """Answers every fetch itself and remembers the requests, under a name."""

    def __init__(self, name: str) -> None:
        super().__init__(SsrfGuard())
        self.name = name
        self.requests: list[FetchRequest] = []

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        self.requests.append(request)
        return FetchResponse(
            request.url, request.url, 200, {}, self.name.encode(), (), 1.0, "text/html", "utf-8"
        )


class Book:
    def __init__(self, *profiles: Profile) -> None:
        self.profiles = profiles
        self.closed = False

    def match(self, domain: str) -> Profile | None:
        return match(self.profiles, domain)

    def close(self) -> None:
        self.closed = True


def request(url: str) -> FetchRequest:
    return FetchRequest(url=url, user_agent="ours", connect_timeout_s=1, read_timeout_s=1, max_bytes=1000)


def no_pool() -> object:
    raise AssertionError("no browser may start for a fetch without a browser profile")


async def test_domains_without_a_profile_go_to_the_fleet_and_profiled_ones_direct_with_their_headers() -> (
    None
):
    fleet, direct = Recording("fleet"), Recording("direct")
    book = Book(Profile("de", ("*.shop.example",), user_agent="theirs", headers={"Accept-Language": "de"}))
    backend = ProfiledBackend(fleet, direct, book, no_pool)  # type: ignore[arg-type]

    plain = await backend.fetch(request("http://news.example/a"))
    profiled = await backend.fetch(request("http://eu.shop.example/b"))
    bad = await backend.fetch(request("not a url"))
    await backend.aclose()

    assert (plain.body, profiled.body, bad.body) == (b"fleet", b"direct", b"fleet")
    assert direct.requests[0].user_agent == "theirs" and direct.requests[0].headers == {
        "Accept-Language": "de"
    }
    assert fleet.requests[0].user_agent == "ours" and book.closed


async def test_the_fleet_backend_serves_as_direct_when_it_is_one() -> None:
    fleet = Recording("fleet")
    backend: FetchBackend = ProfiledBackend(fleet, fleet, Book(Profile("p", ("x.example",))), no_pool)  # type: ignore[arg-type]

    answer = await backend.fetch(request("http://x.example/"))
    await backend.aclose()

    assert answer.body == b"fleet" and len(fleet.requests) == 1
