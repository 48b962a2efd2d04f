"""Serve the unpacked real sites (``real_sites.py``): one host per site, latency, robots.txt, a request log.

Like a static host (GitHub Pages): ``/dir/`` serves ``dir/index.html``, ``/dir`` redirects (301) to
``/dir/``, any other path not unpacked answers 404 with the site's own ``404.html`` when it has one.
Every answer but the ``/_…`` endpoints waits ``latency_ms`` first and is recorded. The endpoints are
the sample site's (``dualplane.sample_site.stats``): ``GET /_log`` (every request: time, host, path,
status, duration), ``GET /_stats``, ``POST /_stats/reset``; any host serves them for all hosts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aiohttp import web

from dualplane.sample_site.site import bind_ports
from dualplane.sample_site.stats import LogEntry, SiteRecorder

if TYPE_CHECKING:
    from real_sites import MirrorSite

LOOPBACK = "127.0.0.1"
HTML = "text/html"


class HostFiles:
    """What one host answers for a path, read from its unpacked folder (the OS caches the files)."""

    def __init__(self, site: MirrorSite, root: Path) -> None:
        self.site, self.root = site, root.resolve()
        not_found = root / "404.html"
        self.not_found = not_found.read_bytes() if not_found.is_file() else b"<h1>404 Not Found</h1>\n"

    def answer(self, path: str) -> web.Response:
        if path == "/robots.txt":
            return web.Response(text=self.site.robots, content_type="text/plain")
        relative = unquote(path).lstrip("/")
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root):
            return self._missing()
        if target.is_dir():
            if not path.endswith("/"):
                return web.Response(status=301, headers={"Location": path + "/"})
            target = target / "index.html"
        if target.is_file() and target.name != "_manifest.json":
            return web.Response(body=target.read_bytes(), content_type=HTML, charset="utf-8")
        return self._missing()

    def _missing(self) -> web.Response:
        return web.Response(status=404, body=self.not_found, content_type=HTML, charset="utf-8")


class Handler:
    def __init__(self, files: HostFiles, host: int, recorder: SiteRecorder, latency_ms: int) -> None:
        self.files, self.host, self.recorder, self.latency_ms = files, host, recorder, latency_ms

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/_"):
            return control(self.recorder, request)
        self.recorder.started(self.host)
        started, status = time.perf_counter(), 500
        try:
            await asyncio.sleep(self.latency_ms / 1000)
            if request.method not in ("GET", "HEAD"):
                response = web.Response(status=405, headers={"Allow": "GET, HEAD"})
            else:
                response = self.files.answer(request.path)
            status = response.status
            return response
        finally:
            self.recorder.finished(
                LogEntry(
                    time=time.time(),
                    host=self.host,
                    method=request.method,
                    path=request.path_qs,
                    status=status,
                    user_agent=request.headers.get("User-Agent", ""),
                    duration_ms=round((time.perf_counter() - started) * 1000, 3),
                    client=request.remote or "",
                )
            )


def control(recorder: SiteRecorder, request: web.Request) -> web.Response:
    route = (request.method, request.path)
    if route == ("GET", "/_log"):
        return web.json_response({"entries": [dataclasses.asdict(e) for e in recorder.entries()]})
    if route == ("GET", "/_stats"):
        return web.json_response(recorder.snapshot().to_json())
    if route == ("POST", "/_stats/reset"):
        recorder.reset()
        return web.json_response({"reset": True})
    return web.json_response(
        {
            "error": f"no endpoint {request.method} {request.path}; known: "
            "GET /_log, GET /_stats, POST /_stats/reset"
        },
        status=404,
    )


async def _serve(
    sites: tuple[MirrorSite, ...],
    cache_dir: Path,
    base_port: int,
    latency_ms: int,
    manifests: list[dict[str, Any]],
) -> None:
    sockets = bind_ports(base_port, len(sites), LOOPBACK)
    urls = [f"http://{LOOPBACK}:{sock.getsockname()[1]}" for sock in sockets]
    recorder = SiteRecorder(urls)
    runners = []
    for host, (site, sock) in enumerate(zip(sites, sockets, strict=True)):
        app = web.Application()
        handler = Handler(HostFiles(site, cache_dir / site.name), host, recorder, latency_ms)
        app.router.add_route("*", "/{tail:.*}", handler.handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        runners.append(runner)
    stopping = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stopping.set)
    described = {
        "urls": urls,
        "seeds": [url + "/" for url in urls],
        "latency_ms": latency_ms,
        "sites": [{"url": url, **manifest} for url, manifest in zip(urls, manifests, strict=True)],
    }
    print(json.dumps(described, indent=2), flush=True)  # its last line is "}": readers stop there
    try:
        await stopping.wait()
    finally:
        for runner in runners:
            await runner.cleanup()


def serve(
    sites: tuple[MirrorSite, ...],
    cache_dir: Path,
    base_port: int,
    latency_ms: int,
    manifests: list[dict[str, Any]],
) -> None:
    """Serve until SIGINT or SIGTERM; prints the description (URLs, seeds, manifests) once listening."""
    asyncio.run(_serve(sites, cache_dir, base_port, latency_ms, manifests))
