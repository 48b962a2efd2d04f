"""Conditional requests: validators in the task, If-None-Match / If-Modified-Since on the wire, and a
304 that ends as ``not_modified``: done, its headers on pages.raw without a body, its event marked."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import CrawlTask, Validators, decode
from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.classify import classify
from dualplane.control_plane.fetcher.retry_policy import Outcome, decide
from dualplane.control_plane.fetcher.worker import Fetcher
from dualplane.core.settings import Settings
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.sample_site import Changes, SampleSite, SiteSpec

pytestmark = [pytest.mark.unit, pytest.mark.anyio]

ETAG, DATE = '"5ee4580034aac378"', "Fri, 15 Jan 2027 08:00:00 GMT"
URL = "http://shop.test/product/oak-desk-lamp-4"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _task(validators: Validators | None = None) -> CrawlTask:
    return CrawlTask(
        job_id="watch", trace_id="t-1", url=URL, domain="shop.test", depth=1, validators=validators
    )


def _response(status: int, headers: Mapping[str, str], body: bytes = b"") -> FetchResponse:
    return FetchResponse(URL, URL, status, headers, body, (), 3.0, "text/html" if body else None, None)


def test_validators_come_from_a_raw_pages_headers_and_become_conditional_headers() -> None:
    validators = Validators.from_headers({"etag": ETAG, "last-modified": DATE, "content-type": "text/html"})

    assert validators == Validators(etag=ETAG, last_modified=DATE)
    assert validators.request_headers() == {"If-None-Match": ETAG, "If-Modified-Since": DATE}
    assert Validators(last_modified=DATE).request_headers() == {"If-Modified-Since": DATE}
    assert Validators.from_headers({"content-type": "text/html"}) is None


def test_a_task_without_validators_encodes_as_before_and_one_with_them_round_trips() -> None:
    plain, conditional = _task(), _task(Validators(etag=ETAG))

    assert "validators" not in json.loads(plain.encode())  # a fetcher of before reads it (extra="forbid")
    assert decode(plain.encode()) == plain
    assert decode(conditional.encode()) == conditional
    old = {k: v for k, v in json.loads(plain.encode()).items() if k != "validators"}
    assert decode(json.dumps(old).encode()).validators is None


@pytest.mark.parametrize(
    ("validators", "why"),
    [
        ({}, "an etag, a last_modified or both"),
        ({"etag": '"a"\r\nX-Injected: 1'}, "control characters"),
        ({"etag": "x" * 2000}, "at most 1024"),
    ],
)
def test_bad_validators_are_rejected_with_the_reason(validators: dict[str, Any], why: str) -> None:
    body = {**json.loads(_task().encode()), "validators": validators}

    with pytest.raises(MessageRejected, match=why):
        decode(json.dumps(body).encode())


def test_a_304_is_not_modified_and_done_like_a_fetched_page() -> None:
    verdict = classify(_response(304, {"etag": ETAG}))

    assert verdict.outcome is Outcome.NOT_MODIFIED
    assert decide(verdict.outcome, attempt=1, max_attempts=5).action == "done"


class Answer(FetchBackend):
    """Gives one prepared response and keeps the request (the worker's logic, without a network)."""

    def __init__(self, response: FetchResponse) -> None:
        self.response = response
        self.requests: list[FetchRequest] = []

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        self.requests.append(request)
        return self.response

    async def aclose(self) -> None:
        pass


class Handed:
    """What the worker hands to Kafka: the page (or None) and the event."""

    def __init__(self) -> None:
        self.sent: list[tuple[Mapping[str, Any] | None, Mapping[str, Any]]] = []

    async def send(self, page: Mapping[str, Any] | None, event: Mapping[str, Any]) -> None:
        self.sent.append((page, event))

    def close(self) -> None:
        pass


async def _fetch(task: CrawlTask, response: FetchResponse) -> tuple[Any, Answer, Handed]:
    backend, outputs = Answer(response), Handed()
    result = await Fetcher(Settings(), backend, outputs)(task)  # type: ignore[arg-type]
    return result, backend, outputs


async def test_a_revisit_sends_its_validators_and_a_304_goes_to_pages_raw_without_a_body() -> None:
    result, backend, outputs = await _fetch(
        _task(Validators(etag=ETAG, last_modified=DATE)), _response(304, {"etag": ETAG, "date": DATE})
    )

    assert backend.requests[0].conditional_headers == {"If-None-Match": ETAG, "If-Modified-Since": DATE}
    [(page, event)] = outputs.sent
    assert page is not None and page["status"] == 304 and page["body"] == b""
    assert page["headers"] == {"etag": ETAG, "date": DATE}
    assert (event["outcome"], event["status"], event["bytes"], event["conditional"]) == (
        "not_modified",
        304,
        0,
        True,
    )
    assert result.outcome is Outcome.NOT_MODIFIED and result.links == ()


async def test_a_changed_page_answers_200_in_full_and_a_304_nobody_asked_for_is_refused() -> None:
    changed, _, full = await _fetch(
        _task(Validators(etag=ETAG)), _response(200, {"etag": '"new"'}, b"<html><a href='/x'>x</a></html>")
    )
    unasked, backend, refused = await _fetch(_task(), _response(304, {"etag": ETAG}))

    [(page, event)] = full.sent
    assert changed.outcome is Outcome.OK and page is not None and page["body"] and event["conditional"]
    assert backend.requests[0].conditional_headers == {}
    [(no_page, event)] = refused.sent
    assert unasked.outcome is Outcome.INVALID_CONTENT and no_page is None and not event["conditional"]
    assert "without validators" in event["detail"]


@pytest.fixture
def changing_site() -> Iterator[SampleSite]:
    spec = SiteSpec(seed=3, hosts=1, pages_per_host=5, latency_ms=0, changes=Changes(60, share=0.5))
    with SampleSite(spec) as site:
        yield site


async def test_the_direct_backend_sends_the_conditional_headers_and_returns_the_304(
    changing_site: SampleSite,
) -> None:
    url = changing_site.seeds[0]
    request = FetchRequest(url, "test", 5, 5, 1_000_000)
    async with DirectBackend(SsrfGuard.from_setting("127.0.0.1")) as backend:
        first = await backend.fetch(request)
        validators = Validators.from_headers(first.headers)
        assert validators is not None
        again = FetchRequest(url, "test", 5, 5, 1_000_000, conditional_headers=validators.request_headers())
        second = await backend.fetch(again)

    assert first.status == 200 and first.body
    assert (second.status, second.body, second.headers["etag"]) == (304, b"", first.headers["etag"])
