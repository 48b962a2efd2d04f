"""ScrapingApiBackend against a local stand-in for a ScrapingAnt-style ``/v2/general`` endpoint."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.backends.scraping_api import ScrapingApiBackend
from dualplane.control_plane.fetcher.classify import classify
from dualplane.control_plane.fetcher.exceptions import (
    ConnectionFailed,
    FetchTimeout,
    QuotaExhausted,
    ScrapingApiFailed,
    SsrfRefused,
    TooLarge,
    UnwantedContent,
)
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.sample_site.site_pages import challenge_page

pytestmark = [pytest.mark.unit, pytest.mark.anyio]

KEY = "test-key-0123456789abcdef"
PAGE = "<html><head><title>Oak table</title></head><body><p>Ça coûte 120 €</p></body></html>"
# Target path -> (target status, body); anything else is the target's 404 page.
TARGETS = {
    "/ok": (200, PAGE),
    "/gone": (410, "<html><body>gone</body></html>"),
    "/captcha": (200, challenge_page()),
    "/big": (200, "<p>" + "x" * 100_000 + "</p>"),
    "/forbidden": (403, "<html><body>members only</body></html>"),
}
# Target path -> how the API itself fails.
API_ERRORS = {
    "/detected": (423, "The anti-bot detection system has detected the request."),
    "/quota": (429, "Monthly quota exceeded"),
    "/concurrency": (409, "Concurrent requests limit exceeded"),
    "/unreachable": (404, "The requested URL is not reachable."),
    "/boom": (500, "Something went wrong"),
}


class StandIn:
    """Mimics the API: key check, parameter validation, target status header, error codes."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []

    async def general(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.calls.append({**query, "ant-user-agent": request.headers.get("Ant-User-Agent", "")})
        if query.get("x-api-key") != KEY:
            return web.json_response({"detail": f"Invalid API key {query.get('x-api-key')}"}, status=403)
        if query.get("browser") not in ("true", "false") or not query.get("url", "").startswith("http"):
            return web.json_response({"detail": "Invalid value for url or browser"}, status=422)
        path = urlsplit(query["url"]).path
        if path == "/slow":
            await asyncio.sleep(2)
        if path == "/image":
            return web.Response(
                body=b"\x89PNG", content_type="image/png", headers={"Ant-Page-Status-Code": "200"}
            )
        if path in API_ERRORS:
            status, detail = API_ERRORS[path]
            return web.json_response({"detail": detail}, status=status)
        status, body = TARGETS.get(path, (404, "<html><body>no such page</body></html>"))
        headers = {
            "Ant-Page-Status-Code": str(status),
            "Ant-Credits-Cost": "10" if query["browser"] == "true" else "1",
            "Server": "cloudflare",  # the API's own CDN, not the target's
        }
        if path == "/uncosted":  # an API that does not say what a call cost
            del headers["Ant-Credits-Cost"]
        return web.Response(text=body, content_type="text/html", headers=headers)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def api() -> AsyncIterator[tuple[StandIn, str]]:
    stand_in = StandIn()
    app = web.Application()
    app.router.add_get("/v2/general", stand_in.general)
    async with TestServer(app, host="127.0.0.1") as server:
        yield stand_in, str(server.make_url("/v2/general"))


def request(path: str, **overrides: object) -> FetchRequest:
    options: dict[str, object] = {"connect_timeout_s": 2.0, "read_timeout_s": 2.0, "max_bytes": 1024 * 1024}
    options.update(overrides)
    return FetchRequest(f"https://shop.example{path}", "dualplane-test/1.0", **options)  # type: ignore[arg-type]


async def test_a_page_comes_back_with_the_targets_status(api: tuple[StandIn, str]) -> None:
    stand_in, url = api
    async with ScrapingApiBackend(url, KEY, extra_params={"proxy_country": "DE"}) as backend:
        response = await backend.fetch(request("/ok"))
    assert (response.status, response.url, response.final_url) == (
        200,
        "https://shop.example/ok",
        response.url,
    )
    assert response.body.decode(response.charset or "") == PAGE
    assert (response.content_type, response.charset) == ("text/html", "utf-8")
    assert response.headers["ant-credits-cost"] == "1"
    assert response.api_credits == 1.0
    assert classify(response).outcome is Outcome.OK
    call = stand_in.calls[0]
    assert (call["url"], call["browser"], call["proxy_country"]) == ("https://shop.example/ok", "false", "DE")
    assert call["ant-user-agent"] == "dualplane-test/1.0"


async def test_render_js_asks_for_the_browser(api: tuple[StandIn, str]) -> None:
    stand_in, url = api
    async with ScrapingApiBackend(url, KEY, render_js=True) as backend:
        response = await backend.fetch(request("/ok"))
    assert stand_in.calls[0]["browser"] == "true"
    assert response.headers["ant-credits-cost"] == "10"
    assert response.api_credits == 10.0


@pytest.mark.parametrize(("render_js", "credits"), [(False, 1.0), (True, 10.0)])
async def test_without_the_apis_figure_a_call_costs_its_documented_price(
    api: tuple[StandIn, str], render_js: bool, credits: float
) -> None:
    async with ScrapingApiBackend(api[1], KEY, render_js=render_js) as backend:
        response = await backend.fetch(request("/uncosted"))
    assert "ant-credits-cost" not in response.headers
    assert response.api_credits == credits


@pytest.mark.parametrize(
    ("path", "status", "outcome"), [("/gone", 410, Outcome.NOT_FOUND), ("/nope", 404, Outcome.NOT_FOUND)]
)
async def test_the_targets_status_passes_through(
    api: tuple[StandIn, str], path: str, status: int, outcome: Outcome
) -> None:
    async with ScrapingApiBackend(api[1], KEY) as backend:
        response = await backend.fetch(request(path))
    assert response.status == status
    assert classify(response).outcome is outcome


async def test_the_apis_own_headers_are_not_taken_for_the_targets(api: tuple[StandIn, str]) -> None:
    async with ScrapingApiBackend(api[1], KEY) as backend:
        response = await backend.fetch(request("/forbidden"))
    assert set(response.headers) == {"content-type", "ant-page-status-code", "ant-credits-cost"}
    assert (response.status, classify(response).outcome) == (403, Outcome.FORBIDDEN)


async def test_a_challenge_page_relayed_with_200_is_still_recognised(api: tuple[StandIn, str]) -> None:
    async with ScrapingApiBackend(api[1], KEY) as backend:
        response = await backend.fetch(request("/captcha"))
    assert response.status == 200
    assert classify(response).outcome is Outcome.BLOCKED_CHALLENGE


async def test_detection_by_the_targets_anti_bot_is_blocked_challenge(api: tuple[StandIn, str]) -> None:
    async with ScrapingApiBackend(api[1], KEY) as backend:
        response = await backend.fetch(request("/detected"))
    assert (response.status, response.body) == (403, b"")
    assert "has detected the request" in response.headers["x-dualplane-blocked"]
    verdict = classify(response)
    assert verdict.outcome is Outcome.BLOCKED_CHALLENGE
    assert "(upstream-marker)" in verdict.detail
    assert response.api_credits == 0.0  # a call the API refused costs nothing


async def test_a_wrong_key_fails_clearly_without_leaking_the_key(api: tuple[StandIn, str]) -> None:
    wrong = "wrong-key-fedcba9876543210"
    async with ScrapingApiBackend(api[1], wrong) as backend:
        with pytest.raises(ScrapingApiFailed, match="API key is wrong or the credits are used up") as failed:
            await backend.fetch(request("/ok"))
    assert failed.value.api_status == 403
    # No key, or no credits: nothing can be fetched through the API; the throttle pauses the fleet
    # and the task waits without spending an attempt (it was retried 5 times, then dead-lettered).
    assert isinstance(failed.value, QuotaExhausted)
    assert failed.value.outcome is Outcome.QUOTA_EXHAUSTED
    assert wrong not in str(failed.value)
    assert "Invalid API key ***" in str(failed.value)


@pytest.mark.parametrize(
    ("path", "api_status", "message", "outcome"),
    [
        ("/quota", 429, "rate limit or quota", Outcome.CONNECTION_ERROR),
        ("/concurrency", 409, "concurrency limit", Outcome.API_BUSY),
        ("/boom", 500, "the API failed", Outcome.CONNECTION_ERROR),
    ],
)
async def test_api_failures_are_retryable_scraping_api_errors(
    api: tuple[StandIn, str], path: str, api_status: int, message: str, outcome: Outcome
) -> None:
    async with ScrapingApiBackend(api[1], KEY) as backend:
        with pytest.raises(ScrapingApiFailed, match=message) as failed:
            await backend.fetch(request(path))
    assert (failed.value.api_status, failed.value.outcome) == (api_status, outcome)
    assert f"https://shop.example{path}" in str(failed.value)


async def test_an_invalid_parameter_is_not_retried(api: tuple[StandIn, str]) -> None:
    async with ScrapingApiBackend(api[1], KEY, extra_params={"browser": "maybe"}) as backend:
        with pytest.raises(ScrapingApiFailed, match="rejected a parameter value") as failed:
            await backend.fetch(request("/ok"))
    assert (failed.value.api_status, failed.value.outcome) == (422, Outcome.INVALID_CONTENT)


async def test_an_unreachable_target_is_a_connection_failure(api: tuple[StandIn, str]) -> None:
    async with ScrapingApiBackend(api[1], KEY) as backend:
        with pytest.raises(ConnectionFailed, match="could not reach the target"):
            await backend.fetch(request("/unreachable"))


async def test_limits_apply_to_relayed_pages(api: tuple[StandIn, str]) -> None:
    async with ScrapingApiBackend(api[1], KEY) as backend:
        with pytest.raises(TooLarge):
            await backend.fetch(request("/big", max_bytes=10_000))
        with pytest.raises(UnwantedContent, match="image/png"):
            await backend.fetch(request("/image"))


async def test_a_slow_api_times_out(api: tuple[StandIn, str]) -> None:
    async with ScrapingApiBackend(api[1], KEY, timeout_s=0.2) as backend:
        with pytest.raises(FetchTimeout, match=re.escape("did not answer within 0.2 s")):
            await backend.fetch(request("/slow"))


async def test_an_unreachable_api_is_a_connection_failure() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v2/general"
    async with ScrapingApiBackend(url, KEY) as backend:
        with pytest.raises(ConnectionFailed, match="cannot reach the scraping API") as failed:
            await backend.fetch(request("/ok"))
    assert KEY not in str(failed.value)


async def test_only_http_targets_are_sent(api: tuple[StandIn, str]) -> None:
    stand_in, url = api
    async with ScrapingApiBackend(url, KEY) as backend:
        with pytest.raises(SsrfRefused, match="only http and https"):
            await backend.fetch(FetchRequest("file:///etc/passwd", "ua", 1.0, 1.0, 1024))
    assert stand_in.calls == []


def test_an_empty_key_is_refused() -> None:
    with pytest.raises(ValueError, match="needs an API key"):
        ScrapingApiBackend("http://127.0.0.1:1/v2/general", "")
