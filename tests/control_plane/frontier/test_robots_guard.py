"""robots.txt through the guarded client, against real local sockets (issue #27: P1, P2, P3).

P1: a redirect to an address the SSRF guard refuses is never connected to. P2: a server trickling
its head a byte at a time cannot hold a check past its deadline. P3: a file over 500 KiB is cut at
its last whole line, not mid-rule into ``Disallow: /``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dualplane.control_plane.frontier.robots import MAX_ROBOTS_BYTES, RobotsCache
from dualplane.core.web.ssrf import SsrfGuard

pytestmark = pytest.mark.unit

AGENT = "dualplane-test/1.0"


@contextmanager
def http_server(host: str, answer: tuple[int, dict[str, str], bytes]) -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on ``host`` giving every GET ``answer``; yields its origin and the paths asked."""
    asked: list[str] = []
    status, headers, body = answer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):  # the client stopped at its cap
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer((host, 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}", asked
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def trickling_server(seconds_per_byte: float, for_s: float) -> Iterator[str]:
    """A raw socket server that sends a status line, then one header byte every ``seconds_per_byte``
    for ``for_s`` seconds: each read gets data well within any per-read timeout, and no head ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                ends_at = time.monotonic() + for_s
                while time.monotonic() < ends_at and not stop.is_set():
                    conn.sendall(b"a")
                    time.sleep(seconds_per_byte)
            except OSError:
                pass  # the client gave up: what the test wants

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def test_a_redirect_to_a_refused_address_is_never_followed() -> None:
    with http_server("127.0.0.2", (200, {}, b"User-agent: *\nAllow: /\n")) as (inner, inner_asked):
        # The inner server is reachable: only the guard can keep the frontier away from it.
        with socket.create_connection(("127.0.0.2", int(inner.rsplit(":", 1)[1])), timeout=2):
            pass
        redirect = (302, {"Location": f"{inner}/robots.txt"}, b"")
        with (
            http_server("127.0.0.1", redirect) as (outer, outer_asked),
            RobotsCache(AGENT, guard=SsrfGuard(["127.0.0.1"]), fetch_timeout_s=5) as robots,
        ):
            verdict = robots.check(f"{outer}/page")

    assert outer_asked == ["/robots.txt"]
    assert inner_asked == [], "the frontier connected to an address the SSRF guard refuses"
    assert not verdict.allowed
    assert "127.0.0.2" in verdict.reason and "SSRF" in verdict.reason, verdict.reason


def test_a_head_trickling_a_byte_a_second_is_cut_at_the_deadline() -> None:
    with (
        trickling_server(seconds_per_byte=0.5, for_s=30) as origin,
        RobotsCache(AGENT, guard=SsrfGuard(["127.0.0.1"]), fetch_timeout_s=1.0) as robots,
    ):
        started = time.monotonic()
        verdict = robots.check(f"{origin}/page")
        took_s = time.monotonic() - started

    assert took_s < 5, f"the check took {took_s:.1f} s: the deadline did not cover the head"
    assert not verdict.allowed
    assert verdict.reason.startswith("robots.txt unreachable: OutboundTimeout"), verdict.reason


def test_ready_does_not_wait_for_a_slow_robots_txt() -> None:
    with (
        trickling_server(seconds_per_byte=0.5, for_s=30) as origin,
        RobotsCache(AGENT, guard=SsrfGuard(["127.0.0.1"]), fetch_timeout_s=1.0, retry_delays_s=()) as robots,
    ):
        started = time.monotonic()
        assert robots.ready(f"{origin}/page") is None
        assert time.monotonic() - started < 0.5
        assert robots.fetching(robots.origin_of(f"{origin}/page"))
        deadline = time.monotonic() + 5
        while robots.fetching(robots.origin_of(origin)) and time.monotonic() < deadline:
            time.sleep(0.05)
        verdict = robots.ready(f"{origin}/page")

    assert verdict is not None and not verdict.allowed


def five_megabytes_of_rules() -> bytes:
    """``Disallow: /nope/N/`` lines past 5 MB, laid so that the 500 KiB cut falls right after the
    ``Disallow: /`` of one of them (which, kept, would forbid the whole site)."""
    head = b"User-agent: *\n"
    lines = [b"Disallow: /nope/%d/\n" % n for n in range(300_000)]
    cut_at = MAX_ROBOTS_BYTES - len(b"Disallow: /")
    offset = len(head) + len(b"#\n")
    for line in lines:
        if offset + len(line) > cut_at:
            break
        offset += len(line)
    padding = b"#" + b"x" * (cut_at - offset) + b"\n"
    body = head + padding + b"".join(lines)
    assert body[MAX_ROBOTS_BYTES - len(b"Disallow: /") : MAX_ROBOTS_BYTES] == b"Disallow: /"
    assert len(body) > 5_000_000
    return body


def test_a_file_over_500_kib_is_cut_at_its_last_whole_line() -> None:
    answer = (200, {"Content-Type": "text/plain"}, five_megabytes_of_rules())
    with (
        http_server("127.0.0.1", answer) as (origin, _),
        RobotsCache(AGENT, guard=SsrfGuard(["127.0.0.1"]), fetch_timeout_s=10) as robots,
    ):
        assert not robots.check(f"{origin}/nope/7/page").allowed  # the rules before the cut hold
        assert robots.check(f"{origin}/products/1").allowed, "the cut line became 'Disallow: /'"
        assert robots.check(f"{origin}/").allowed
