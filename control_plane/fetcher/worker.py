"""One fetch attempt, end to end: guard, request, classify, hand the results to Kafka.

:class:`Fetcher` is the ``FetchWork`` of the fetch-side :class:`~control_plane.fetcher.runner.TaskRunner`:
it returns a :class:`FetchResult` for the retry policy only after Kafka confirmed the fetch event
(and, for a successful fetch, the raw page), so the runner's ack means "safely in the data plane".
A task with validators is fetched with a conditional GET; its 304 is a success too (``not_modified``),
and goes to ``pages.raw`` with its headers and an empty body (see ``docs/conditional-requests.md``).
The result carries the page's links (:mod:`.links`), which the runner hands to the frontier with
that ack.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from dualplane.brokers.amqp.messages import CrawlTask, Validators
from dualplane.control_plane.fetcher import metrics
from dualplane.control_plane.fetcher.backends.base import (
    RENDERED_HEADER,
    FetchBackend,
    FetchRequest,
    FetchResponse,
)
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.backends.profiled import ProfiledBackend
from dualplane.control_plane.fetcher.backends.proxies import ProxyPool
from dualplane.control_plane.fetcher.backends.scraping_api import ScrapingApiBackend
from dualplane.control_plane.fetcher.classify import Classification, classify
from dualplane.control_plane.fetcher.exceptions import FetchFailed
from dualplane.control_plane.fetcher.links import NO_LINKS, links_of
from dualplane.control_plane.fetcher.outputs import KafkaOutputs
from dualplane.control_plane.fetcher.profile_store import ProfileView
from dualplane.control_plane.fetcher.profiles import Profile
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.control_plane.fetcher.runner import FetchResult, HandOffFailed
from dualplane.control_plane.fetcher.sessions import SessionJars
from dualplane.core.settings import Settings
from dualplane.core.web.ssrf import SsrfGuard

if TYPE_CHECKING:
    from dualplane.control_plane.fetcher.backends.browser_pool import BrowserPool

log = logging.getLogger(__name__)

# Response headers worth keeping with a raw page (for extraction, caching and debugging).
KEPT_HEADERS = (
    "content-type", "content-language", "last-modified", "etag", "cache-control", "expires",
    "link", "x-robots-tag", "server", "date", "content-length", RENDERED_HEADER,
)  # fmt: skip
# Outcomes whose response goes to pages.raw: a 304 too, with its headers and no body, so that the
# archive can record the revisit and readers of pages.raw see that the page was seen unchanged.
KEPT_OUTCOMES = frozenset({Outcome.OK, Outcome.NOT_MODIFIED})


class Fetcher:
    """Fetches one task with ``backend`` and hands page and event to ``outputs``."""

    def __init__(self, settings: Settings, backend: FetchBackend, outputs: KafkaOutputs) -> None:
        self.settings = settings
        self.backend = backend
        self.outputs = outputs
        self.fetcher_id = f"{socket.gethostname()}-{os.getpid()}"

    @classmethod
    def from_settings(cls, settings: Settings) -> Fetcher:
        return cls(settings, backend_from_settings(settings), KafkaOutputs(settings))

    async def __call__(self, task: CrawlTask) -> FetchResult:
        fetched_at = datetime.now(UTC)
        started = time.monotonic()
        response: FetchResponse | None = None
        try:
            response = await self.backend.fetch(self._request(task))
            verdict = _unasked_304(classify(response), task)
        except FetchFailed as failure:
            verdict = Classification(failure.outcome, None, str(failure))
        latency_ms = int((time.monotonic() - started) * 1000)
        metrics.fetched(verdict.outcome, latency_ms, len(response.body) if response else 0)
        event = fetch_event(
            task,
            response,
            verdict=verdict,
            fetched_at=fetched_at,
            latency_ms=latency_ms,
            fetcher_id=self.fetcher_id,
        )
        page = raw_page(task, response, fetched_at) if response and verdict.outcome in KEPT_OUTCOMES else None
        # Parsed here, once: the runner hands them to the frontier with the task's ack. A page with no
        # validators is fingerprinted from the same parse, for a monitor's next visit to compare.
        validators = _validators(response, verdict)
        found = NO_LINKS
        if page is not None and response is not None:
            found = await links_of(response, self.settings.fetch, fingerprint=validators is None)
        try:
            await self.outputs.send(page, event)
        except HandOffFailed:
            raise
        except Exception as error:  # e.g. a schema error: the outputs were not handed on
            raise HandOffFailed(f"could not produce outputs for {task.url}: {error}") from error
        status = response.status if response else None
        log.debug("fetched %s: %s, HTTP %s, %d ms", task.url, verdict.outcome, status, latency_ms)
        redirect_to = _location(response) if verdict.outcome is Outcome.REDIRECT else None
        return FetchResult(
            verdict.outcome, status, verdict.detail, verdict.retry_after_s, redirect_to,
            links=found.urls, links_over_limit=found.over_limit,
            final_url=response.final_url if response and found.urls else None,
            validators=validators, fingerprint=found.fingerprint, sent_s=started,
        )  # fmt: skip

    async def aclose(self) -> None:
        await self.backend.aclose()
        self.outputs.close()

    def _request(self, task: CrawlTask) -> FetchRequest:
        fetch = self.settings.fetch
        return FetchRequest(
            url=task.url,
            user_agent=fetch.user_agent,
            connect_timeout_s=fetch.connect_timeout_s,
            read_timeout_s=fetch.read_timeout_s,
            max_bytes=self.settings.limits.max_page_bytes,
            max_redirects=fetch.max_redirects,
            total_timeout_s=fetch.total_timeout_s,
            conditional_headers=task.validators.request_headers() if task.validators else {},
        )


def backend_from_settings(settings: Settings) -> FetchBackend:
    """The fleet's backend, behind the profiles (read from Kafka now, then followed)."""
    fleet = fleet_backend(settings)
    direct = fleet if isinstance(fleet, DirectBackend) else DirectBackend.from_settings(settings)
    view = ProfileView(settings.kafka, settings.topics.profiles)
    view.start()
    new_api = None if settings.fetch.scraping_api_key is None else (lambda profile: _api(settings, profile))

    def through(proxies: tuple[str, ...]) -> DirectBackend:
        return DirectBackend.from_settings(settings, proxies=ProxyPool(list(proxies)))

    return ProfiledBackend(
        fleet, direct, view, lambda: _browser_pool(settings), new_api=new_api, new_direct=through,
        sessions=SessionJars(settings.stack.data_dir / "fetcher" / "sessions.json"),
    )  # fmt: skip


def fleet_backend(settings: Settings) -> FetchBackend:
    """The backend of domains without a profile: ``DUALPLANE_FETCH_BACKEND``."""
    fetch = settings.fetch
    if fetch.backend == "scraping_api":
        if fetch.scraping_api_key is None:
            raise FetchFailed(
                "DUALPLANE_FETCH_BACKEND=scraping_api needs DUALPLANE_FETCH_SCRAPING_API_KEY to be set"
            )
        return ScrapingApiBackend(
            fetch.scraping_api_url,
            fetch.scraping_api_key.get_secret_value(),
            render_js=fetch.scraping_api_render_js,
        )
    if fetch.backend == "browser":
        from dualplane.control_plane.fetcher.backends.browser import (  # noqa: PLC0415
            BrowserBackend,  # imported here: only fetchers that render load Playwright
        )

        return BrowserBackend.from_settings(settings)
    proxies = [p.strip() for p in fetch.proxies.split(",") if p.strip()]
    return DirectBackend(
        SsrfGuard.from_setting(fetch.allow_hosts),
        max_connections=settings.limits.fetch_concurrency,
        proxies=ProxyPool(proxies) if proxies else None,
    )


def _api(settings: Settings, profile: Profile) -> FetchBackend:
    """The managed API for a profile: the fleet's key and render setting, the profile's country."""
    fetch = settings.fetch
    assert fetch.scraping_api_key is not None  # only made when there is one
    return ScrapingApiBackend(
        fetch.scraping_api_url,
        fetch.scraping_api_key.get_secret_value(),
        render_js=fetch.scraping_api_render_js,
        extra_params={"proxy_country": profile.country} if profile.country else {},
    )


def _browser_pool(settings: Settings) -> BrowserPool:
    from dualplane.control_plane.fetcher.backends.browser_pool import (  # noqa: PLC0415
        BrowserPool,  # imported here: only fetchers that render load Playwright
        PoolLimits,
    )

    fetch = settings.fetch
    limits = PoolLimits(max_contexts=fetch.browser_contexts, pages_per_launch=fetch.browser_pages_per_launch)
    return BrowserPool(fetch.browser_executable, limits)


def fetch_event(
    task: CrawlTask,
    response: FetchResponse | None,
    *,
    verdict: Classification,
    fetched_at: datetime,
    latency_ms: int,
    fetcher_id: str,
) -> dict[str, Any]:
    """The ``fetch_event`` record of one attempt (schemas/avro/fetch_event)."""
    return {
        "job_id": task.job_id,
        "trace_id": task.trace_id,
        "task_id": task.task_id,
        "url": task.url,
        "final_url": response.final_url if response else None,
        "domain": task.domain,
        "outcome": str(verdict.outcome),
        "status": response.status if response else None,
        "latency_ms": latency_ms,
        "bytes": len(response.body) if response else 0,
        "attempt": task.attempt,
        "fetched_at": fetched_at,
        "retry_after_s": verdict.retry_after_s,
        "api_credits": response.api_credits if response else 0.0,
        "detail": verdict.detail[:1000],
        "fetcher_id": fetcher_id,
        "conditional": task.validators is not None,
    }


def raw_page(task: CrawlTask, response: FetchResponse, fetched_at: datetime) -> dict[str, Any]:
    """The ``raw_page`` envelope of a fetched page (schemas/avro/raw_page)."""
    return {
        "job_id": task.job_id,
        "trace_id": task.trace_id,
        "task_id": task.task_id,
        "url": task.url,
        "final_url": response.final_url,
        "domain": task.domain,
        "depth": task.depth,
        "attempt": task.attempt,
        "status": response.status,
        "fetched_at": fetched_at,
        "content_type": response.content_type,
        "charset": response.charset,
        "headers": {k: v for k, v in response.headers.items() if k in KEPT_HEADERS},
        "redirect_chain": list(response.redirect_chain),
        "body": response.body,
        "body_truncated": response.truncated,
        "claim_check": None,
        "extractor": task.extractor,
    }


def _unasked_304(verdict: Classification, task: CrawlTask) -> Classification:
    """A 304 answers a conditional GET only: to a plain GET it leaves us without the page."""
    if verdict.outcome is not Outcome.NOT_MODIFIED or task.validators is not None:
        return verdict
    detail = "HTTP 304 Not Modified to a request without validators: the server sent no page"
    return Classification(Outcome.INVALID_CONTENT, None, detail)


def _validators(response: FetchResponse | None, verdict: Classification) -> Validators | None:
    """The validators of a page fetched (or found unchanged): what a monitor sends on its next visit."""
    if response is None or verdict.outcome not in KEPT_OUTCOMES:
        return None
    try:
        return Validators.from_headers({name.lower(): value for name, value in response.headers.items()})
    except ValueError:  # a validator no request may carry (control characters, too long): none kept
        return None


def _location(response: FetchResponse | None) -> str | None:
    location = response.headers.get("location") if response else None
    return urljoin(response.final_url, location.strip()) if response and location else None
