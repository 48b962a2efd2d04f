"""ProfiledBackend: each fetch goes the way its domain's profile says (fake backends: pure routing)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import SecretStr

from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.backends.profiled import ProfiledBackend
from dualplane.control_plane.fetcher.backends.scraping_api import ScrapingApiBackend
from dualplane.control_plane.fetcher.exceptions import ConnectionFailed
from dualplane.control_plane.fetcher.profiles import Profile, match
from dualplane.control_plane.fetcher.worker import _api
from dualplane.core.settings import FetchSettings, Settings
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

    def named(self, name: str) -> Profile | None:
        return next((profile for profile in self.profiles if profile.name == name), None)

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


async def test_an_api_profile_goes_through_the_api_of_its_country_or_fails_clearly_without_a_key() -> None:
    fleet, countries = Recording("fleet"), list[str | None]()

    def new_api(profile: Profile) -> FetchBackend:
        countries.append(profile.country)
        return Recording(f"api-{profile.country}")

    book = Book(Profile("de", ("de.shop.example",), backend="api", country="DE"))
    backend = ProfiledBackend(fleet, fleet, book, no_pool, new_api=new_api)  # type: ignore[arg-type]
    keyless = ProfiledBackend(fleet, fleet, book, no_pool)  # type: ignore[arg-type]

    first = await backend.fetch(request("http://de.shop.example/a"))
    second = await backend.fetch(request("http://de.shop.example/b"))
    with pytest.raises(ConnectionFailed, match="DUALPLANE_FETCH_SCRAPING_API_KEY"):
        await keyless.fetch(request("http://de.shop.example/a"))
    await backend.aclose()

    assert (first.body, second.body, countries) == (b"api-DE", b"api-DE", ["DE"])


def test_the_fetchers_api_client_for_a_profile_asks_for_its_country() -> None:
    settings = Settings().model_copy(
        update={"fetch": FetchSettings(scraping_api_key=SecretStr("k"), scraping_api_render_js=True)}
    )
    api = _api(settings, Profile("de", ("x.example",), backend="api", country="DE"))

    assert isinstance(api, ScrapingApiBackend)
    assert api.extra_params == {"proxy_country": "DE"} and api.render_js


async def test_a_profile_with_proxies_gets_a_direct_client_of_its_own_once() -> None:
    fleet, made = Recording("fleet"), list[tuple[str, ...]]()
    proxies = ("http://user:pw@proxy.example:3128",)

    def through(given: tuple[str, ...]) -> DirectBackend:
        made.append(given)
        return Recording("proxied")

    book = Book(Profile("p", ("x.example",), proxies=proxies), Profile("q", ("y.example",)))
    backend = ProfiledBackend(fleet, fleet, book, no_pool, new_direct=through)  # type: ignore[arg-type]

    answers = [await backend.fetch(request(url)) for url in ("http://x.example/1", "http://x.example/2")]
    plain = await backend.fetch(request("http://y.example/"))
    await backend.aclose()

    assert [a.body for a in answers] == [b"proxied", b"proxied"] and plain.body == b"fleet"
    assert made == [proxies]


async def test_a_jobs_profile_applies_whatever_the_domain_and_a_deleted_one_falls_back() -> None:
    fleet, direct = Recording("fleet"), Recording("direct")
    book = Book(Profile("job-wide", ("nothing.example",), user_agent="job's"))
    backend = ProfiledBackend(fleet, direct, book, no_pool)  # type: ignore[arg-type]

    named = await backend.fetch(replace(request("http://news.example/a"), profile="job-wide"))
    gone = await backend.fetch(replace(request("http://news.example/b"), profile="deleted-since"))
    await backend.aclose()

    assert (named.body, gone.body) == (b"direct", b"fleet")
    assert direct.requests[0].user_agent == "job's"
