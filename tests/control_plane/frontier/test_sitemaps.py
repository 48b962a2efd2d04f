"""Reading sitemaps through the guarded client, against a real local HTTP server: robots.txt
``Sitemap:`` lines, indexes, gzip both ways, and a readable problem for every bad sitemap."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dualplane.control_plane.frontier.sitemaps import SitemapProblem, SitemapReader
from dualplane.core.web.client import GuardedClient
from dualplane.core.web.client_thread import ClientThread
from dualplane.core.web.ssrf import SsrfGuard

pytestmark = pytest.mark.unit

Routes = dict[str, tuple[int, dict[str, str], bytes]]


@contextmanager
def site(routes: Routes) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 answering each path from ``routes`` (404 otherwise)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = routes.get(self.path, (404, {}, b"not found"))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):  # the client stopped at its cap
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def client() -> Iterator[ClientThread]:
    made = ClientThread(
        GuardedClient(SsrfGuard(["127.0.0.1"]), user_agent="dualplane-test/1.0"), name="test-sitemaps"
    )
    yield made
    made.close()


def xml(body: str) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/xml"}, body.encode()


def urlset(*locs: str) -> str:
    entries = "".join(f"<url><loc>{loc}</loc><lastmod>2026-11-28</lastmod></url>" for loc in locs)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'


def index(*locs: str) -> str:
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'


def read(
    client: ClientThread, url: str, **options: int
) -> tuple[list[str], list[SitemapProblem], SitemapReader]:
    problems: list[SitemapProblem] = []
    reader = SitemapReader(client, on_problem=problems.append, fetch_timeout_s=5, **options)
    return [entry.url for entry in reader.entries(url)], problems, reader


def test_robots_names_an_index_of_a_gzip_file_and_a_gzip_encoded_answer(client: ClientThread) -> None:
    routes: Routes = {}
    with site(routes) as origin:
        routes["/robots.txt"] = 200, {}, f"User-agent: *\nAllow: /\nSitemap: {origin}/index.xml\n".encode()
        routes["/index.xml"] = xml(index(f"{origin}/a.xml.gz", f"{origin}/b.xml"))
        routes["/a.xml.gz"] = (
            200,
            {"Content-Type": "application/gzip"},
            gzip.compress(urlset(f"{origin}/p1").encode()),
        )
        routes["/b.xml"] = 200, {"Content-Encoding": "gzip"}, gzip.compress(urlset(f"{origin}/p2").encode())
        problems: list[SitemapProblem] = []
        reader = SitemapReader(client, on_problem=problems.append, fetch_timeout_s=5)
        named = reader.robots_sitemaps(f"{origin}/any/page")
        pages = [entry for url in named for entry in reader.entries(url, robots_site=origin)]
    assert named == [f"{origin}/index.xml"]
    assert [entry.url for entry in pages] == [f"{origin}/p1", f"{origin}/p2"]
    assert all(entry.lastmod_ms == 1_795_824_000_000 for entry in pages)  # 2026-11-28T00:00Z
    assert problems == [] and reader.stats.sitemaps_read == 3


def test_a_loop_of_indexes_is_read_once_and_named(client: ClientThread) -> None:
    routes: Routes = {}
    with site(routes) as origin:
        routes["/a.xml"] = xml(index(f"{origin}/b.xml"))
        routes["/b.xml"] = xml(index(f"{origin}/a.xml", f"{origin}/pages.xml"))
        routes["/pages.xml"] = xml(urlset(f"{origin}/p1"))
        pages, problems, _ = read(client, f"{origin}/a.xml")
    assert pages == [f"{origin}/p1"]
    assert [p.reason for p in problems] == [
        f"{origin}/a.xml: a loop of sitemap indexes: {origin}/a.xml -> {origin}/b.xml -> {origin}/a.xml"
    ]


def test_indexes_nested_past_the_depth_are_a_problem(client: ClientThread) -> None:
    routes: Routes = {}
    with site(routes) as origin:
        for level in range(3):
            routes[f"/i{level}.xml"] = xml(index(f"{origin}/i{level + 1}.xml"))
        routes["/i3.xml"] = xml(urlset(f"{origin}/deep"))
        pages, problems, _ = read(client, f"{origin}/i0.xml", max_depth=2)
    assert pages == []
    assert len(problems) == 1 and "nested deeper than 2 levels" in problems[0].reason


def test_urls_of_another_host_are_counted_skipped_and_named(client: ClientThread) -> None:
    routes: Routes = {}
    with site(routes) as origin:
        routes["/s.xml"] = xml(urlset(f"{origin}/mine", "http://elsewhere.test/1", "http://elsewhere.test/2"))
        pages, problems, reader = read(client, f"{origin}/s.xml")
    assert pages == [f"{origin}/mine"]
    assert reader.stats.out_of_scope == 2
    assert len(problems) == 1
    scope = f"{origin}/s.xml: 2 URL(s) out of the sitemap's scope (host 127.0.0.1:"
    assert problems[0].reason.startswith(scope)
    assert "e.g. http://elsewhere.test/1, http://elsewhere.test/2" in problems[0].reason
    assert problems[0].entries_used == 1


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ((404, {}, b"gone"), "sitemap unavailable: HTTP 404"),
        ((200, {}, b"<html><body>hello</body></html>"), "the root element is <html>"),
        ((200, {}, b"User-agent: *"), "not a well-formed XML sitemap"),
        ((200, {}, urlset(*(f"http://x.test/{i}" for i in range(100))).encode()), "larger than 1,000 bytes"),
        ((302, {"Location": "http://127.0.0.2/s.xml"}, b""), "UnsafeUrl"),
    ],
)
def test_a_bad_sitemap_is_a_problem_with_its_reason_and_the_walk_goes_on(
    client: ClientThread, answer: tuple[int, dict[str, str], bytes], why: str
) -> None:
    routes: Routes = {"/bad.xml": answer}
    with site(routes) as origin:
        routes["/index.xml"] = xml(index(f"{origin}/bad.xml", f"{origin}/good.xml"))
        routes["/good.xml"] = xml(urlset(f"{origin}/ok"))
        pages, problems, _ = read(client, f"{origin}/index.xml", max_bytes=1000)
    assert pages == [f"{origin}/ok"]
    assert len(problems) == 1 and problems[0].sitemap_url == f"{origin}/bad.xml"
    assert why in problems[0].reason


def test_a_sitemap_at_a_refused_address_is_never_fetched(client: ClientThread) -> None:
    pages, problems, _ = read(client, "http://127.0.0.3:9/sitemap.xml")
    assert pages == [] and "sitemap unreachable: UnsafeUrl" in problems[0].reason
