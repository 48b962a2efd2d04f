"""``render: auto``: render a domain's pages only when its direct pages lack what rendering shows.

Per domain, in each fetcher process (as Crawlee's adaptive crawler decides, per domain and learnt):

1. **Learning.** The domain's first ``SAMPLES`` HTML pages are fetched directly and then rendered
   from that same answer (no second request), and the two are compared by the one rule of
   :mod:`~control_plane.fetcher.render_need`. The rendered page is what the fetch returns; a sample
   the browser cannot render (a timeout, a crash) returns the direct page and counts as showing
   nothing more, so no task fails for a sample.
2. **Decided.** If any sample needed rendering, every later page of the domain is rendered (as
   ``backend: browser``). If none did, the domain is fetched directly, at the cost of a direct
   fetch and one dictionary lookup; one page in ``RESAMPLE_EVERY`` is sampled again, so a shop that
   starts drawing its prices with a script is noticed.

The answer is remembered per domain in memory (at most ``MAX_DOMAINS``); a restarted fetcher
learns again, at ``SAMPLES`` renders per domain. Decisions are logged once per domain.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.exceptions import FetchFailed
from dualplane.control_plane.fetcher.render_need import render_need, shown
from dualplane.core.web.urls import domain_of

log = logging.getLogger(__name__)

SAMPLES = 3
RESAMPLE_EVERY = 500
MAX_DOMAINS = 100_000
HTML_TYPES = ("text/html", "application/xhtml+xml")


class Renderer(Protocol):
    """What auto needs of a :class:`~.browser.BrowserBackend`."""

    async def render(
        self, request: FetchRequest, response: FetchResponse, started: float
    ) -> FetchResponse: ...


@dataclass
class Verdict:
    """One domain's state: samples taken, whether it renders, pages fetched since the last sample."""

    sampled: int = 0
    renders: bool = False
    since_sample: int = 0


class AdaptiveBackend(FetchBackend):
    """Fetches with ``direct``; renders with ``renderer`` what the domain's verdict says (see above)."""

    def __init__(self, direct: FetchBackend, renderer: Renderer) -> None:
        self.direct = direct
        self.renderer = renderer
        self.verdicts: OrderedDict[str, Verdict] = OrderedDict()

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        """See :meth:`FetchBackend.fetch`."""
        started = time.perf_counter()
        verdict = self._verdict(request.url)
        response = await self.direct.fetch(request)
        if verdict.renders:
            return await self.renderer.render(request, response, started)
        verdict.since_sample += 1
        if (verdict.sampled >= SAMPLES and verdict.since_sample < RESAMPLE_EVERY) or not _html(response):
            return response
        try:
            rendered = await self.renderer.render(request, response, started)
        except FetchFailed as error:  # the direct answer is a good page: it is judged on its HTML alone
            verdict.sampled += 1
            verdict.since_sample = 0
            log.info("render auto: a sample of %s did not render (%s); its HTML is kept", request.url, error)
            return response
        self._learn(verdict, request.url, response, rendered)
        return rendered

    async def aclose(self) -> None:
        pass  # the profiled backend closes the direct backend and the browser pool it shares

    def _verdict(self, url: str) -> Verdict:
        # A task's URL is canonical: its netloc is its domain (domain_of's 8 µs spared on each fetch).
        domain = url.split("/", 3)[2] if "://" in url else ""
        verdict = self.verdicts.get(domain)
        if verdict is None:
            if len(self.verdicts) >= MAX_DOMAINS:
                self.verdicts.popitem(last=False)
            verdict = self.verdicts[domain] = Verdict()
        return verdict

    def _learn(self, verdict: Verdict, url: str, direct: FetchResponse, rendered: FetchResponse) -> None:
        verdict.sampled += 1
        verdict.since_sample = 0
        need = render_need(shown(_text(direct)), shown(_text(rendered)))
        if need is not None:
            verdict.renders = True
            log.info("render auto: %s renders from now on (%s at %s)", domain_of(url), need, url)
        elif verdict.sampled == SAMPLES:
            log.info("render auto: %s is fetched directly (%d pages showed nothing more rendered)",
                     domain_of(url), SAMPLES)  # fmt: skip


def _html(response: FetchResponse) -> bool:
    return 200 <= response.status < 300 and response.content_type in HTML_TYPES and bool(response.body)


def _text(response: FetchResponse) -> str:
    return response.body.decode(response.charset or "utf-8", errors="replace")
