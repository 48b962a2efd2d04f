"""A managed scraping API (ScrapingAnt v2 ``/v2/general`` style) as a fetch backend.

The call is ``GET {api_url}?url=<target>&x-api-key=<key>&browser=true|false[&extra params]``.
The API answers 200 with the page as its body and the target's status in ``Ant-Page-Status-Code``;
headers prefixed ``Ant-`` are forwarded to the target without the prefix (we send our User-Agent
that way). Each answered call carries what it cost in credits (``FetchResponse.api_credits``: the
API's ``Ant-Credits-Cost`` header, else its documented price); the throttle sums them against the
daily credit budget. Its own errors (docs.scrapingant.com/errors) are mapped as follows:

=====  ==========================================  =========================================
API    meaning                                     here
=====  ==========================================  =========================================
403    wrong API key, or credits used up           QuotaExhausted (quota_exhausted: the throttle
                                                   pauses every domain; no attempt is spent)
409    concurrency limit of the plan               ScrapingApiFailed (api_busy: no attempt spent)
429    rate limit or quota                         ScrapingApiFailed (connection_error)
400    malformed request                           ScrapingApiFailed (invalid_content)
422    invalid parameter value                     ScrapingApiFailed (invalid_content)
404    the target is not reachable                 ConnectionFailed
423    the target's anti-bot system detected it    response marked blocked (blocked_challenge)
5xx    the API failed                              ScrapingApiFailed (connection_error)
=====  ==========================================  =========================================

The API fetches from the provider's network, so the SSRF guard does not apply; only http(s)
targets are sent. The API key is never put in an error message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Mapping
from types import MappingProxyType
from urllib.parse import urlsplit

import httpx

from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.backends.body import ACCEPT_ENCODING, read_capped, read_response
from dualplane.control_plane.fetcher.challenges import BLOCKED_MARKER
from dualplane.control_plane.fetcher.exceptions import (
    ConnectionFailed,
    FetchTimeout,
    QuotaExhausted,
    ScrapingApiFailed,
    SsrfRefused,
)
from dualplane.control_plane.fetcher.retry_policy import Outcome

NO_PARAMS: Mapping[str, str] = MappingProxyType({})
STATUS_HEADER = "ant-page-status-code"
CREDITS_HEADER = "ant-credits-cost"  # what the call cost, when the API says
# Its documented price (docs.scrapingant.com, API credits usage) when it does not: a plain request
# through its datacenter proxies, and one rendered by a headless browser. A refused call costs 0.
PLAIN_CREDITS, BROWSER_CREDITS = 1.0, 10.0
BLOCKED_STATUS = 403  # what a blocked fetch looks like when the API does not say the target's status
ERROR_BODY_BYTES = 4096
# API status -> (what it means, outcome); missing statuses are the API failing (connection_error).
API_ERRORS: Mapping[int, tuple[str, Outcome]] = MappingProxyType(
    {
        400: ("the API rejected the request format", Outcome.INVALID_CONTENT),
        403: (
            "the API key is wrong or the credits are used up; check the key and the plan",
            Outcome.QUOTA_EXHAUSTED,
        ),
        409: (
            "the plan's concurrency limit is reached; lower the fetch concurrency",
            Outcome.API_BUSY,
        ),
        422: ("the API rejected a parameter value", Outcome.INVALID_CONTENT),
        429: (
            "the API's rate limit or quota is reached; retry later or raise the plan",
            Outcome.CONNECTION_ERROR,
        ),
    }
)


class ScrapingApiBackend(FetchBackend):
    """Fetches through a managed scraping API that renders pages and rotates its own proxies.

    ``render_js`` asks for a headless browser (slower, costlier); ``extra_params`` are added to
    every call (e.g. ``{"proxy_country": "DE"}``); ``timeout_s`` is the longest the API may take
    to answer, rendering included. A fetch's ``total_timeout_s`` still bounds the whole call.
    """

    def __init__(
        self,
        api_url: str,
        api_key: str,
        *,
        render_js: bool = False,
        extra_params: Mapping[str, str] = NO_PARAMS,
        timeout_s: float = 60,
    ) -> None:
        if not api_key:
            raise ValueError("a ScrapingApiBackend needs an API key (DUALPLANE_FETCH_SCRAPING_API_KEY)")
        self.api_url = api_url
        self.render_js = render_js
        self.extra_params = dict(extra_params)
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False)

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        """See :meth:`FetchBackend.fetch`; API-level failures raise :class:`ScrapingApiFailed`."""
        if urlsplit(request.url).scheme not in ("http", "https"):
            raise SsrfRefused(f"only http and https URLs are fetched: {request.url}", final_url=request.url)
        try:
            async with asyncio.timeout(request.total_timeout_s):
                return await self._call(request)
        except TimeoutError as error:
            raise FetchTimeout(
                f"{request.url}: the scraping API gave no complete answer within "
                f"total_timeout_s={request.total_timeout_s} s",
                final_url=request.url,
            ) from error
        except httpx.TimeoutException as error:
            raise FetchTimeout(
                f"{request.url}: the scraping API did not answer within {self.timeout_s} s "
                f"({type(error).__name__})",
                final_url=request.url,
            ) from error
        except httpx.HTTPError as error:
            raise ConnectionFailed(
                f"{request.url}: cannot reach the scraping API at {self.api_url}: {self._redact(str(error))}",
                final_url=request.url,
            ) from error

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _call(self, request: FetchRequest) -> FetchResponse:
        started = time.perf_counter()
        params = {
            "url": request.url,
            "x-api-key": self._api_key,
            "browser": "true" if self.render_js else "false",
            **self.extra_params,
        }
        headers = {"Ant-User-Agent": request.user_agent, "Accept-Encoding": ACCEPT_ENCODING}
        # Forwarded to the target like the User-Agent; a 304 comes back as the target's status.
        headers.update({f"Ant-{name}": value for name, value in request.conditional_headers.items()})
        timeout = httpx.Timeout(
            connect=request.connect_timeout_s, read=self.timeout_s, write=self.timeout_s, pool=None
        )
        api_request = self._client.build_request(
            "GET", self.api_url, params=params, headers=headers, timeout=timeout
        )
        response = await self._client.send(api_request, stream=True)
        try:
            return await self._answer(request, response, started)
        finally:
            await response.aclose()

    async def _answer(self, request: FetchRequest, response: httpx.Response, started: float) -> FetchResponse:
        api_status = response.status_code
        if 200 <= api_status < 300:
            answer = await read_response(
                request,
                response,
                final_url=request.url,
                status=_target_status(response) or api_status,
                redirect_chain=(),
                started=started,
                headers=_relayed_headers(response),
            )
            return dataclasses.replace(answer, api_credits=self._credits(response))
        detail = await self._error_detail(response)
        if api_status == 423:
            return _blocked(request, response, detail, started)
        if api_status == 404:
            raise ConnectionFailed(
                f"{request.url}: the scraping API could not reach the target ({detail})",
                final_url=request.url,
            )
        meaning, outcome = API_ERRORS.get(api_status, ("the API failed", Outcome.CONNECTION_ERROR))
        failure = QuotaExhausted if outcome is Outcome.QUOTA_EXHAUSTED else ScrapingApiFailed
        raise failure(
            f"{request.url}: scraping API {self.api_url} answered HTTP {api_status}: {meaning} ({detail})",
            api_status=api_status,
            outcome=outcome,
            final_url=request.url,
        )

    async def _error_detail(self, response: httpx.Response) -> str:
        """The API's ``{"detail": ...}`` message, or the start of its body."""
        body = await read_capped(response, url=self.api_url, max_bytes=ERROR_BODY_BYTES, truncate=True)
        text = body.data.decode("utf-8", "replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "detail" in parsed:
            text = str(parsed["detail"])
        return self._redact(text.strip()[:500]) or "no detail"

    def _credits(self, response: httpx.Response) -> float:
        """What the call cost: the API's own figure, else its documented price."""
        try:
            cost = float(response.headers[CREDITS_HEADER])
        except (KeyError, ValueError):
            return BROWSER_CREDITS if self.render_js else PLAIN_CREDITS
        return cost if cost >= 0 else 0.0

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***")


def _target_status(response: httpx.Response) -> int | None:
    try:
        status = int(response.headers[STATUS_HEADER])
    except (KeyError, ValueError):
        return None
    return status if 100 <= status <= 999 else None


def _relayed_headers(response: httpx.Response) -> dict[str, str]:
    # The API's own transport headers (its server, its CDN's markers) say nothing about the target
    # and could trip a detector, so only the content type and the API's ant-* reports are kept.
    return {
        name: value
        for name, value in response.headers.items()
        if name == "content-type" or name.startswith("ant-")
    }


def _blocked(request: FetchRequest, response: httpx.Response, detail: str, started: float) -> FetchResponse:
    # The body is the API's error message, not the target's page, so it is not kept.
    headers = _relayed_headers(response)
    headers[BLOCKED_MARKER] = f"scraping API: the target's anti-bot system detected the request ({detail})"
    return FetchResponse(
        url=request.url,
        final_url=request.url,
        status=_target_status(response) or BLOCKED_STATUS,
        headers=headers,
        body=b"",
        redirect_chain=(),
        elapsed_ms=(time.perf_counter() - started) * 1000,
        content_type=None,
        charset=None,
    )
