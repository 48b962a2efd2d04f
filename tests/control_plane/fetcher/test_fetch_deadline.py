"""The fetcher bounds a whole fetch by ``DUALPLANE_FETCH_TOTAL_TIMEOUT_S``.

A probe's finding: a server dripping its body a byte at a time held a permit for 59 s, since only
the read timeout (between bytes) applied to a fetch the fetcher made.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.control_plane.fetcher.worker import Fetcher
from dualplane.core.settings import FetchSettings, Settings
from dualplane.core.web.ssrf import SsrfGuard
from tests.control_plane.fetcher.test_direct_backend import Recorder, make_app

pytestmark = [pytest.mark.unit, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def drip_url() -> AsyncIterator[str]:
    async with TestServer(make_app(Recorder()), host="127.0.0.1") as server:
        yield f"http://127.0.0.1:{server.port}/drip"  # a byte every 50 ms for 5 s


class Handed:
    """Where the fetcher's outputs go here: nothing is to be handed on when a fetch times out."""

    def __init__(self) -> None:
        self.events: list[Mapping[str, Any]] = []

    async def send(self, page: Mapping[str, Any] | None, event: Mapping[str, Any]) -> None:
        self.events.append(event)


async def test_a_dripping_body_is_cut_at_the_total_timeout_setting(drip_url: str) -> None:
    settings = Settings().model_copy(
        update={"fetch": FetchSettings(read_timeout_s=2.0, total_timeout_s=0.5, allow_hosts="127.0.0.1")}
    )
    handed = Handed()
    async with DirectBackend(SsrfGuard(["127.0.0.1"])) as backend:
        fetcher = Fetcher(settings, backend, handed)  # type: ignore[arg-type]
        task = CrawlTask(job_id="j", trace_id="t", url=drip_url, domain="127.0.0.1", depth=0)
        started = time.monotonic()
        result = await fetcher(task)
        took_s = time.monotonic() - started

    assert result.outcome is Outcome.TIMEOUT
    assert "total_timeout_s=0.5" in result.detail
    assert took_s < 3.0  # the drip lasts 5 s; read_timeout_s alone would let it run to the end
    assert [event["outcome"] for event in handed.events] == ["timeout"]
