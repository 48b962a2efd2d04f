"""robots.txt against a real local HTTP server: rules, crawl-delay, 4xx, 5xx, redirects, timeouts, caching."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dualplane.control_plane.frontier.robots import MAX_ROBOTS_BYTES, RobotsCache
from dualplane.core.web.ssrf import SsrfGuard

pytestmark = pytest.mark.unit

AGENT = "dualplane-test/1.0"
LOOPBACK = SsrfGuard(["127.0.0.1"])  # the test servers' address, and no other


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class RobotsServer:
    """A real HTTP server on 127.0.0.1 whose routes each test sets, counting the requests per path."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: Counter[str] = Counter()
        self.user_agents: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests[self.path] += 1
                server.user_agents.append(self.headers.get("User-Agent", ""))
                route = server.routes.get(self.path, Route(404, b"not found"))
                time.sleep(route.delay_s)
                try:
                    self.send_response(route.status)
                    for name, value in route.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(route.body)))
                    self.end_headers()
                    self.wfile.write(route.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first: exactly what the timeout test wants

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # A short poll interval keeps shutdown() quick.
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def reset(self) -> None:
        self.routes.clear()
        self.requests.clear()
        self.user_agents.clear()

    def robots(self, text: str, **route: object) -> None:
        self.routes["/robots.txt"] = Route(body=text.encode(), **route)  # type: ignore[arg-type]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def running_server() -> Iterator[RobotsServer]:
    running = RobotsServer()
    yield running
    running.close()


@pytest.fixture
def server(running_server: RobotsServer) -> RobotsServer:
    """The module's server with no routes and zeroed counters (each test gets a fresh cache too)."""
    running_server.reset()
    return running_server


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def robots(clock: FakeClock) -> Iterator[RobotsCache]:
    # No retries of an unreachable file here: the tests of its retries below set their own delays.
    with RobotsCache(
        AGENT, guard=LOOPBACK, ttl_s=3600, error_ttl_s=60, fetch_timeout_s=2, clock=clock, retry_delays_s=()
    ) as cache:
        yield cache


def test_disallow_rules_are_obeyed(server: RobotsServer, robots: RobotsCache) -> None:
    server.robots("User-agent: *\nDisallow: /private\nAllow: /private/open\n")

    assert robots.check(f"{server.origin}/public").allowed
    assert robots.check(f"{server.origin}/private/open/page").allowed
    verdict = robots.check(f"{server.origin}/private/secret")
    assert not verdict.allowed
    assert verdict.reason == f"disallowed by robots.txt for user agent {AGENT!r}"
    assert server.user_agents == [AGENT]


def test_the_group_for_our_user_agent_wins(server: RobotsServer, robots: RobotsCache) -> None:
    server.robots("User-agent: *\nDisallow: /\n\nUser-agent: dualplane-test\nDisallow: /admin\n")

    assert robots.check(f"{server.origin}/page").allowed
    assert not robots.check(f"{server.origin}/admin").allowed


def test_crawl_delay_is_exposed(server: RobotsServer, robots: RobotsCache) -> None:
    server.robots("User-agent: *\nCrawl-delay: 2.5\nDisallow: /tmp\n")

    assert robots.check(f"{server.origin}/").crawl_delay_s == 2.5
    assert robots.check(f"{server.origin}/tmp/x").crawl_delay_s == 2.5


def test_a_404_allows_everything(server: RobotsServer, robots: RobotsCache) -> None:
    verdict = robots.check(f"{server.origin}/anything")

    assert verdict.allowed
    assert verdict.crawl_delay_s is None
    assert verdict.reason == "robots.txt unavailable (HTTP 404): everything allowed"


def test_a_5xx_disallows_everything_until_the_error_ttl_passes(
    server: RobotsServer, robots: RobotsCache, clock: FakeClock
) -> None:
    server.robots("oops", status=503)

    verdict = robots.check(f"{server.origin}/page")
    assert not verdict.allowed
    assert verdict.reason.startswith("robots.txt unreachable: HTTP 503")

    server.robots("User-agent: *\nDisallow: /private\n")
    clock.now_s += 59
    assert not robots.check(f"{server.origin}/page").allowed  # still the cached error
    clock.now_s += 2
    assert robots.check(f"{server.origin}/page").allowed
    assert server.requests["/robots.txt"] == 2


def _settled(check: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_an_unreachable_robots_txt_is_asked_again_and_obeyed_once_it_answers(server: RobotsServer) -> None:
    server.robots("down", status=503)
    url = f"{server.origin}/page"

    with RobotsCache(AGENT, guard=LOOPBACK, fetch_timeout_s=2, retry_delays_s=(0.3, 0.3)) as robots:
        origin = robots.origin_of(url)
        assert robots.ready(url) is None
        _settled(lambda: robots.retrying(origin) is not None)
        assert robots.retrying(origin) == "robots.txt unreachable: HTTP 503; retrying in 0.3 s"
        assert robots.ready(url) is None and robots.fetching(origin)  # not "disallowed": not known yet
        server.robots("User-agent: *\nAllow: /\n")
        _settled(lambda: not robots.fetching(origin))
        verdict = robots.ready(url)

    assert verdict is not None and verdict.allowed, verdict
    assert server.requests["/robots.txt"] == 2


def test_an_unreachable_robots_txt_disallows_once_its_retries_are_spent(server: RobotsServer) -> None:
    server.robots("down", status=503)
    url = f"{server.origin}/page"

    with RobotsCache(AGENT, guard=LOOPBACK, fetch_timeout_s=2, retry_delays_s=(0.1, 0.1)) as robots:
        assert robots.ready(url) is None
        _settled(lambda: not robots.fetching(robots.origin_of(url)))
        verdict = robots.ready(url)

    assert verdict is not None and not verdict.allowed
    assert verdict.reason.startswith("robots.txt unreachable: HTTP 503")
    assert server.requests["/robots.txt"] == 3  # the first ask and two retries


def test_a_429_counts_as_unreachable(server: RobotsServer, robots: RobotsCache) -> None:
    server.robots("slow down", status=429)

    assert not robots.check(f"{server.origin}/page").allowed


def test_a_connection_error_disallows_everything(robots: RobotsCache) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]

    verdict = robots.check(f"http://127.0.0.1:{closed_port}/page")

    assert not verdict.allowed
    assert verdict.reason.startswith("robots.txt unreachable: OutboundFailed")


def test_a_slow_server_times_out_and_disallows(server: RobotsServer, clock: FakeClock) -> None:
    answer_s = 30.0  # the server answers only after this; a check that waited for it would take as long
    server.robots("User-agent: *\nAllow: /\n", delay_s=answer_s)

    with RobotsCache(AGENT, guard=LOOPBACK, fetch_timeout_s=0.2, clock=clock) as robots:
        started = time.monotonic()
        verdict = robots.check(f"{server.origin}/page")

    assert time.monotonic() - started < answer_s / 3, "the check waited for the answer, not its timeout"
    assert not verdict.allowed
    assert verdict.reason.startswith("robots.txt unreachable: OutboundTimeout")


def test_redirects_are_followed(server: RobotsServer, robots: RobotsCache) -> None:
    server.routes["/robots.txt"] = Route(301, headers={"Location": "/moved/robots.txt"})
    server.routes["/moved/robots.txt"] = Route(body=b"User-agent: *\nDisallow: /no\n")

    assert not robots.check(f"{server.origin}/no").allowed
    assert robots.check(f"{server.origin}/yes").allowed
    assert server.requests["/moved/robots.txt"] == 1


def test_more_than_five_redirects_count_as_unavailable(server: RobotsServer, robots: RobotsCache) -> None:
    server.routes["/robots.txt"] = Route(302, headers={"Location": "/r1"})
    for hop in range(1, 10):
        server.routes[f"/r{hop}"] = Route(302, headers={"Location": f"/r{hop + 1}"})

    verdict = robots.check(f"{server.origin}/page")

    assert verdict.allowed
    assert verdict.reason == "robots.txt unavailable (HTTP 302 after 5 redirects): everything allowed"
    assert sum(server.requests.values()) == 6


def test_bodies_over_500_kib_are_truncated(server: RobotsServer, robots: RobotsCache) -> None:
    head = "User-agent: *\nDisallow: /early\n"
    padding = "# padding\n" * (MAX_ROBOTS_BYTES // 10)
    server.robots(head + padding + "Disallow: /late\n")

    assert not robots.check(f"{server.origin}/early").allowed
    assert robots.check(f"{server.origin}/late").allowed  # the rule sat past the 500 KiB cut


def test_answers_are_cached_per_origin_until_the_ttl(
    server: RobotsServer, robots: RobotsCache, clock: FakeClock
) -> None:
    server.robots("User-agent: *\nDisallow: /private\n")

    for path in ("/a", "/b", "/private/c"):
        robots.check(f"{server.origin}{path}")
    assert server.requests["/robots.txt"] == 1

    clock.now_s += 3601
    robots.check(f"{server.origin}/a")
    assert server.requests["/robots.txt"] == 2


def test_the_cache_keeps_at_most_max_domains_origins(server: RobotsServer, clock: FakeClock) -> None:
    other = RobotsServer()
    try:
        with RobotsCache(AGENT, guard=LOOPBACK, max_domains=1, clock=clock) as robots:
            robots.check(f"{server.origin}/a")
            robots.check(f"{other.origin}/a")
            robots.check(f"{server.origin}/b")  # evicted by the other origin: fetched again
            assert len(robots) == 1
    finally:
        other.close()

    assert server.requests["/robots.txt"] == 2
    assert other.requests["/robots.txt"] == 1


def test_invalid_urls_are_refused_before_any_fetch(robots: RobotsCache) -> None:
    from dualplane.core.web.exceptions import InvalidUrl  # noqa: PLC0415 (kept next to its only use)

    with pytest.raises(InvalidUrl, match="not an http"):
        robots.check("ftp://example.com/file")
