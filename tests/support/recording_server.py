"""Local HTTP hosts that record, from the server's side, how hard a crawler pushes them.

Each host is a ``ThreadingHTTPServer`` on its own loopback port; every request waits
``latency_s`` so concurrency is observable. The servers count requests per path and the
highest number of requests they ever served at once, and keep each request's (path, start, end)
in monotonic time.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RecordingHost:
    def __init__(self, latency_s: float = 0.1, pad_bytes: int = 0) -> None:
        self.latency_s = latency_s
        self.pad_bytes = pad_bytes  # filler in every page, to make pages of a size
        self.lock = threading.Lock()
        self.current = 0
        self.max_concurrent = 0
        self.requests: Counter[str] = Counter()
        self.intervals: list[tuple[str, float, float]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingHost:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/robots.txt":
                    self.send_error(404)
                    return
                started = time.monotonic()
                with host.lock:
                    host.current += 1
                    host.max_concurrent = max(host.max_concurrent, host.current)
                    host.requests[self.path] += 1
                try:
                    time.sleep(host.latency_s)
                    filler = "x" * host.pad_bytes
                    body = f"<html><body>page {self.path}<!-- {filler} --></body></html>".encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    with host.lock:
                        host.current -= 1
                        host.intervals.append((self.path, started, time.monotonic()))

            def log_message(self, format: str, *args: Any) -> None:  # silence per-request logging
                pass

        return Handler
