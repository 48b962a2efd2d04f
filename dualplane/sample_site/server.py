"""The aiohttp application of one host: pages with latency and anti-bot, plus the ``/_…`` endpoints.

``/_truth``, ``/_stats``, ``/_stats/reset``, ``/_log``, ``/_control/anti_bot`` and ``/_changes`` are
served on every host, answer at once (no latency, no anti-bot) and are never recorded in the stats.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from aiohttp import web

from dualplane.sample_site import sessions
from dualplane.sample_site.antibot import RateGate, Verdict
from dualplane.sample_site.changes import not_modified
from dualplane.sample_site.exceptions import SampleSiteError
from dualplane.sample_site.routes import Response, SiteModel
from dualplane.sample_site.site_pages import challenge_page
from dualplane.sample_site.spec import AntiBot, SiteSpec
from dualplane.sample_site.stats import LogEntry, SiteRecorder, SiteStats
from dualplane.sample_site.truth import changed_pages, changed_products, ground_truth

PAGE_CACHE_SIZE = 1024
TEXT_TYPES = ("text/", "application/xml", "application/json")
ANTI_BOT_USAGE = (
    '{"anti_bot": {"max_rps": 5, "mode": "429"|"captcha"|"mixed", "retry_after_s": 5} | null, '
    '"hosts": [0, 2] | "all"}'
)


class SiteState:
    """What all hosts of one running site share: content, recorders, gates and anti-bot policies,
    and the clock a changing site (``spec.changes``) reads its time step from."""

    def __init__(self, spec: SiteSpec, clock: Callable[[], float] = time.time) -> None:
        self.spec = spec
        self.clock = clock
        self.model = SiteModel(spec)
        self.recorder = SiteRecorder(spec.origins())
        self.gates = [RateGate() for _ in range(spec.hosts)]
        policy = spec.anti_bot
        self.policies: list[AntiBot | None] = [
            policy if policy is not None and policy.applies_to(host) else None for host in range(spec.hosts)
        ]
        self.resolve = lru_cache(maxsize=PAGE_CACHE_SIZE)(self.model.resolve)

    def set_anti_bot(self, host: int, policy: AntiBot | None) -> None:
        if not 0 <= host < self.spec.hosts:
            raise SampleSiteError(f"no host {host}: this site has hosts 0..{self.spec.hosts - 1}")
        self.gates[host].clear()
        self.policies[host] = policy

    def stats(self) -> SiteStats:
        return self.recorder.snapshot()

    def step(self) -> int:
        """The time step the site is at now (always 0 on a site that does not change)."""
        return self.spec.changes.step(self.clock()) if self.spec.changes is not None else 0


def build_app(state: SiteState, host: int) -> web.Application:
    """The application serving host ``host`` of ``state``."""
    app = web.Application()
    handler = HostHandler(state, host)
    app.router.add_route("*", "/{tail:.*}", handler.handle)
    return app


class HostHandler:
    def __init__(self, state: SiteState, host: int) -> None:
        self.state, self.host = state, host

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/_"):
            return await control(self.state, self.host, request)
        self.state.recorder.started(self.host)
        started = time.perf_counter()
        status, blocked = 500, None
        try:
            verdict = self.state.gates[self.host].judge(self.state.policies[self.host])
            if self.state.spec.latency_ms:
                await asyncio.sleep(self.state.spec.latency_ms / 1000)
            if request.method == "POST" and verdict == "pass":
                response = await self._post(request)
            else:
                response = self._respond(request, verdict)
            status, blocked = response.status, (None if verdict == "pass" else verdict)
            return response
        finally:
            entry = LogEntry(
                time=time.time(),
                host=self.host,
                method=request.method,
                path=request.path_qs,
                status=status,
                user_agent=request.headers.get("User-Agent", ""),
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
                blocked=blocked,
                client=request.remote or "",
            )
            self.state.recorder.finished(entry)

    def _respond(self, request: web.Request, verdict: Verdict) -> web.Response:
        if verdict == "429":
            policy = self.state.policies[self.host]
            retry_after = str(policy.retry_after_s if policy else 1)
            return web.Response(status=429, text="Too Many Requests\n", headers={"Retry-After": retry_after})
        if verdict == "captcha":
            headers = {"cf-mitigated": "challenge", "Cache-Control": "no-store"}
            return web.Response(text=challenge_page(), content_type="text/html", headers=headers)
        if request.method in ("GET", "HEAD"):
            gated = self._gated(request)
            if gated is not None:
                return gated
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="Method Not Allowed\n", headers={"Allow": "GET, HEAD"})
        response = self.state.resolve(self.host, request.path, request.query_string, self.state.step())
        if response.status == 200 and self.state.spec.changes is not None:
            inm, ims = request.headers.get("If-None-Match"), request.headers.get("If-Modified-Since")
            if (inm is not None or ims is not None) and not_modified(response.headers, inm, ims):
                validators = {name: response.headers[name] for name in ("ETag", "Last-Modified")}
                return web.Response(status=304, headers=validators)
        return to_aiohttp(response)

    def _gated(self, request: web.Request) -> web.Response | None:
        spec = self.state.spec
        if self.host not in spec.consent_hosts and self.host not in spec.login_hosts:
            return None
        if request.path in ("/consent", "/login"):
            return web.Response(text=sessions.form_page(request.path), content_type="text/html")
        target = sessions.gate(spec, self.host, request.path_qs, request.cookies)
        return None if target is None else web.Response(status=302, headers={"Location": target})

    async def _post(self, request: web.Request) -> web.Response:
        form = {name: str(value) for name, value in (await request.post()).items()}
        status, headers = sessions.post(self.state.spec, self.host, request.path, form)
        if status == 404:
            return web.Response(status=405, text="Method Not Allowed\n", headers={"Allow": "GET, HEAD"})
        return web.Response(status=status, headers=headers, text="" if status == 303 else "Refused\n")


def to_aiohttp(response: Response) -> web.Response:
    charset = "utf-8" if response.content_type.startswith(TEXT_TYPES) else None
    return web.Response(
        status=response.status,
        body=response.body,
        content_type=response.content_type,
        charset=charset,
        headers=dict(response.headers),
    )


async def control(state: SiteState, host: int, request: web.Request) -> web.Response:
    """The ``/_…`` endpoints."""
    route = (request.method, request.path)
    if route == ("GET", "/_truth"):
        payload = await asyncio.get_running_loop().run_in_executor(None, _truth_json, state.spec)
        return web.Response(body=payload, content_type="application/json")
    if route == ("GET", "/_stats"):
        return web.json_response(state.stats().to_json())
    if route == ("POST", "/_stats/reset"):
        state.recorder.reset()
        return web.json_response({"reset": True})
    if route == ("GET", "/_log"):
        return _log(state, request)
    if request.path == "/_control/anti_bot" and request.method in ("GET", "POST"):
        return await _anti_bot(state, host, request)
    return await _changes(state, request) if route == ("GET", "/_changes") else _unknown(request)


def _unknown(request: web.Request) -> web.Response:
    known = (
        "GET /_truth, GET /_stats, POST /_stats/reset, GET /_log, GET|POST /_control/anti_bot, GET /_changes"
    )
    return web.json_response(
        {"error": f"no endpoint {request.method} {request.path}; known: {known}"}, status=404
    )


def _truth_json(spec: SiteSpec) -> bytes:
    return json.dumps(ground_truth(spec).to_json(), ensure_ascii=False).encode()


async def _changes(state: SiteState, request: web.Request) -> web.Response:
    """``?since=EPOCH_S[&until=EPOCH_S]``: the steps, and the products and pages that changed between."""
    changes = state.spec.changes
    if changes is None:
        return web.json_response(
            {"error": "this site does not change (start it with --change-every)"}, status=404
        )
    try:
        since_s = float(request.query["since"])
        until_s = float(request.query.get("until", state.clock()))
    except (KeyError, ValueError):
        return web.json_response({"error": "give since (and optionally until) as epoch seconds"}, status=400)
    steps = changes.step(since_s), changes.step(until_s)
    pages = await asyncio.get_running_loop().run_in_executor(None, changed_pages, state.spec, *steps)
    products = changed_products(state.spec, *steps)
    body = {
        "since_step": steps[0],
        "until_step": steps[1],
        "products": sorted(products),
        "pages": sorted(pages),
    }
    return web.json_response(body)


def _log(state: SiteState, request: web.Request) -> web.Response:
    try:
        host = int(request.query["host"]) if "host" in request.query else None
        limit = int(request.query.get("limit", "0"))
    except ValueError:
        return web.json_response({"error": "host and limit must be integers"}, status=400)
    if host is not None and not 0 <= host < state.spec.hosts:
        return web.json_response(
            {"error": f"no host {host}; hosts are 0..{state.spec.hosts - 1}"}, status=400
        )
    entries = state.recorder.entries(host)
    if limit > 0:
        entries = entries[-limit:]
    return web.json_response({"entries": [dataclasses.asdict(entry) for entry in entries]})


async def _anti_bot(state: SiteState, host: int, request: web.Request) -> web.Response:
    """Read (GET) or switch (POST) anti-bot policies; answers with every host's policy.

    POST body: ``{"anti_bot": {"max_rps": 5, "mode": "429", "retry_after_s": 5} | null,
    "hosts": [0, 2] | "all"}``; ``hosts`` defaults to the host that received the request.
    """
    if request.method == "POST":
        try:
            body = await request.json()
            hosts = _target_hosts(body.get("hosts"), host, state.spec.hosts)
            settings = body.get("anti_bot")
            policy = None if settings is None else AntiBot(**{**settings, "hosts": None})
        except (ValueError, TypeError, AttributeError, SampleSiteError) as error:
            message = f"bad anti-bot control request ({error}); send JSON like {ANTI_BOT_USAGE}"
            return web.json_response({"error": message}, status=400)
        for target in hosts:
            state.set_anti_bot(target, policy)
    return web.json_response({"anti_bot": [policy_json(policy) for policy in state.policies]})


def _target_hosts(value: Any, default: int, count: int) -> list[int]:
    if value is None:
        return [default]
    if value == "all":
        return list(range(count))
    hosts = [int(item) for item in value]
    if not all(0 <= item < count for item in hosts):
        raise ValueError(f"hosts {hosts} out of range 0..{count - 1}")
    return hosts


def policy_json(policy: AntiBot | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    return {"max_rps": policy.max_rps, "mode": policy.mode, "retry_after_s": policy.retry_after_s}
