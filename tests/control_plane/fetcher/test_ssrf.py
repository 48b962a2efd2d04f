"""SSRF without gaps: every private, local or special address form is refused, and a fetch connects
only to an address the guard checked (no DNS rebinding window), through the real DirectBackend."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from yarl import URL

from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.classify import classify
from dualplane.control_plane.fetcher.exceptions import SsrfRefused
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.web.exceptions import UnsafeUrl
from dualplane.core.web.pinned import check_ip_host
from dualplane.core.web.ssrf import IpAddress, SsrfGuard
from tests.control_plane.fetcher.test_direct_backend import Recorder, fetch_request, make_app

pytestmark = [pytest.mark.unit, pytest.mark.anyio]

Resolve = Callable[[str, int], list[IpAddress]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def answers(*rounds: dict[str, str]) -> Resolve:
    """A DNS that answers from ``rounds[0]``, then ``rounds[1]``… (the last one from then on)."""
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[IpAddress]:
        table = rounds[min(len(calls), len(rounds) - 1)]
        calls.append(host)
        if host not in table:
            raise UnsafeUrl(f"cannot resolve {host}")
        return [ipaddress.ip_address(table[host])]

    return resolve


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.1.2.3/", "10.1.2.3, a private address"),  # RFC 1918
        ("http://172.16.0.1/", "a private address"),
        ("http://172.31.255.254/", "a private address"),
        ("http://192.168.1.1/", "a private address"),
        ("http://[::1]/", "::1, a loopback address"),
        ("http://[fc00::1]/", "a private address"),  # unique local, fc00::/7
        ("http://[fd12:3456::1]/", "a private address"),
        ("http://[fe80::1]/", "a link-local address"),  # fe80::/10
        ("http://[::ffff:127.0.0.1]/", "an IPv6 form of 127.0.0.1, a loopback address"),
        ("http://[::ffff:10.0.0.1]/", "an IPv6 form of 10.0.0.1, a private address"),
        ("http://[::ffff:169.254.169.254]/", "an IPv6 form of 169.254.169.254, a cloud metadata address"),
        ("http://[64:ff9b::7f00:1]/", "an IPv6 form of 127.0.0.1"),  # NAT64
        ("http://[2002:7f00:1::]/", "an IPv6 form of 127.0.0.1"),  # 6to4
        ("http://224.0.0.1/", "a multicast address"),
        ("http://[ff02::1]/", "a multicast address"),
        ("http://0.0.0.0/", "an unspecified address"),
        ("http://[::]/", "an unspecified address"),
        ("http://100.64.0.1/", "not a public address"),  # carrier-grade NAT
        ("http://2130706433/", "127.0.0.1, a loopback address"),  # decimal
        ("http://0177.0.0.1/", "127.0.0.1, a loopback address"),  # octal
        ("http://0x7f.1/", "127.0.0.1, a loopback address"),  # hex, short form
        ("http://localhost/", "a loopback address"),  # a name that resolves to a local address
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
    ],
)
def test_every_local_or_private_form_is_refused(url: str, reason: str) -> None:
    with pytest.raises(UnsafeUrl, match="refused to prevent SSRF") as refused:
        SsrfGuard().check_sync(url)
    assert reason in str(refused.value)


def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    guard = SsrfGuard(resolve=answers({"127.0.0.1": "127.0.0.1", "intranet.example": "10.20.30.40"}))
    with pytest.raises(UnsafeUrl, match=r"intranet\.example resolves to 10\.20\.30\.40, a private address"):
        guard.check_sync("https://intranet.example/admin")


def test_cidr_allow_lists_open_exactly_their_block() -> None:
    guard = SsrfGuard(["10.0.0.0/8", "fd00::/8"])
    guard.check_sync("http://10.200.0.1/")
    guard.check_sync("http://[fd00::5]/")
    guard.check_sync("http://[::ffff:10.1.1.1]/")
    for outside in ("http://192.168.0.1/", "http://11.0.0.1.invalid/", "http://[fc00::1]/"):
        assert not guard.allows(outside)


def test_public_addresses_pass() -> None:
    SsrfGuard().check_sync("http://93.184.216.34/")
    SsrfGuard().check_sync("http://[2606:2800:220:1::1]/")


async def go(request: web.Request) -> web.Response:
    """``/go?to=URL``: a redirect to anywhere."""
    raise web.HTTPFound(request.query["to"])


@pytest.fixture
async def server() -> AsyncIterator[tuple[int, Recorder]]:
    recorder = Recorder()
    app = make_app(recorder)
    app.router.add_get("/go", go)
    async with TestServer(app, host="127.0.0.1") as running:
        assert running.port is not None
        yield running.port, recorder


async def test_the_connection_goes_to_the_address_the_guard_checked(server: tuple[int, Recorder]) -> None:
    """``pinned.example`` exists only in the guard's resolver: the fetch can only reach the server
    if the connection is made to the address the guard resolved and checked."""
    port, recorder = server
    guard = SsrfGuard(["127.0.0.1"], resolve=answers({"pinned.example": "127.0.0.1"}))
    async with DirectBackend(guard) as backend:
        response = await backend.fetch(fetch_request(f"http://pinned.example:{port}/page"))
    assert response.status == 200
    assert recorder.hits["/page"] == 1


async def test_dns_rebinding_between_the_check_and_the_connection_is_refused(
    server: tuple[int, Recorder],
) -> None:
    """The first answer is public (the check passes), the next one loopback: the connection's own
    resolution is checked too, so the server is never reached."""
    port, recorder = server
    guard = SsrfGuard(resolve=answers({"rebind.example": "93.184.216.34"}, {"rebind.example": "127.0.0.1"}))
    async with DirectBackend(guard) as backend:
        with pytest.raises(
            SsrfRefused, match=r"rebind\.example resolves to 127\.0\.0\.1, a loopback address"
        ):
            await backend.fetch(fetch_request(f"http://rebind.example:{port}/page"))
    assert recorder.hits["/page"] == 0


async def test_a_redirect_within_the_site_is_checked_again_before_it_is_followed(
    server: tuple[int, Recorder],
) -> None:
    """Through redirects: the site's name answers an allowed address for the first request (its
    check, then its connection) and a private one when its redirect is about to be followed. The
    hop is refused before it is requested."""
    port, recorder = server
    allowed, rebound = {"site.example": "127.0.0.1"}, {"site.example": "10.1.2.3"}
    guard = SsrfGuard(["127.0.0.1"], resolve=answers(allowed, allowed, rebound))
    async with DirectBackend(guard) as backend:
        with pytest.raises(
            SsrfRefused, match=r"redirect from .*/redirect/1 to .*/redirect/0 refused: "
        ) as refused:
            await backend.fetch(fetch_request(f"http://site.example:{port}/redirect/1"))
    assert "site.example resolves to 10.1.2.3, a private address" in str(refused.value)
    assert (recorder.hits["/redirect/1"], recorder.hits["/redirect/0"]) == (1, 0)


@pytest.mark.parametrize(
    "host",
    [
        "10.1.2.3",
        "167772161",  # 10.0.0.1 in decimal
        "012.0.0.1",  # 10.0.0.1 in octal (httpx refused such a Location; the OS reads it as 10.0.0.1)
        "[::ffff:10.0.0.1]",
        "[fd00::1]",
        "[fe80::1]",
        "224.0.0.1",
        "0.0.0.0",  # connecting to it reaches this host's own listeners, the server's too
        "[::]",
        "intranet.example",  # resolves to 10.20.30.40
    ],
)
async def test_a_redirect_to_a_private_address_is_never_connected_to(
    server: tuple[int, Recorder], host: str
) -> None:
    """Through redirects: a redirect to another host is returned, not followed, and its target,
    fetched as a task of its own, is refused before any connection (the server counts requests)."""
    port, recorder = server
    dns = SsrfGuard().resolve  # the real one: it reads the decimal, octal and IPv6 forms as the OS does

    def resolve(name: str, port: int) -> list[IpAddress]:
        return [ipaddress.ip_address("10.20.30.40")] if name == "intranet.example" else dns(name, port)

    async with DirectBackend(SsrfGuard(["127.0.0.1"], resolve=resolve)) as backend:
        response = await backend.fetch(
            fetch_request(f"http://127.0.0.1:{port}/go?to=http://{host}:{port}/page")
        )
        assert (response.status, response.redirect_chain) == (302, ())
        assert classify(response).outcome is Outcome.REDIRECT
        with pytest.raises(SsrfRefused, match="refused to prevent SSRF"):
            await backend.fetch(fetch_request(response.headers["location"]))  # what the frontier is handed
    assert recorder.hits["/page"] == 0


async def test_an_ip_literal_host_is_checked_where_aiohttp_connects_without_a_resolver() -> None:
    """aiohttp asks no resolver for an IP-literal host: the backend makes the guard's check itself,
    on the host as aiohttp parsed it (a second line behind the check of the URL as urllib parses it)."""
    guard = SsrfGuard(["127.0.0.1"])
    await check_ip_host(guard, URL("http://127.0.0.1:8080/"))
    for refused in (
        "http://10.0.0.1/",
        "http://[::1]:8080/",
        "http://[::ffff:169.254.169.254]/",
        "http://167772161/",
    ):
        with pytest.raises(UnsafeUrl, match="refused to prevent SSRF"):
            await check_ip_host(guard, URL(refused))
    await check_ip_host(SsrfGuard(resolve=answers({})), URL("http://name.example/"))  # names: the resolver's
