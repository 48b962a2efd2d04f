"""Many domains at once (issue #33): 45 healthy sample-site hosts and 5 blocking at 2, 5 and 20 req/s.

The frontier and a fetcher run as threads of this process, the Faust processor as a child (as in
:mod:`tests.support.anti_bot_loop`), every setting at its shipped default except P_d and the delay
(8 and 0, so that the sites' limits bind). One job crawls every page of all 50 hosts (seeds
interleaved across hosts, so every domain has work from the start). Every second the run records
what each host served and blocked, and the limits the fleet holds for it.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.control_plane.frontier.client import JobClient
from dualplane.control_plane.frontier.submit import default_scope
from dualplane.core.settings import FetchSettings, LimitSettings, Settings, ThrottleSettings
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.throttle.view import ThrottleView
from dualplane.namespaces import private_namespace
from dualplane.sample_site import AntiBot, SampleSite, SiteSpec
from dualplane.services import ServiceGroup
from tests.support.anti_bot_loop import wait_for_processor

SERVICES = ("frontier", "fetcher", "throttle")
LIMITS = (2.0, 2.0, 5.0, 5.0, 20.0)  # the blocking hosts' limits, requests per second


@dataclass
class HostSeries:
    url: str
    max_rps: float | None  # None: a healthy host
    requests: list[int] = field(default_factory=list)
    blocked: list[int] = field(default_factory=list)
    limits: list[tuple[int, int, str]] = field(default_factory=list)  # (P_d, delay, source)

    def held(self, first_s: int, last_s: int) -> float:
        """Mean requests per second between the two seconds (the site's own count)."""
        window = self.requests[first_s:last_s]
        return sum(window) / max(1, len(window))

    def summary(self, first_s: int, last_s: int) -> dict[str, Any]:
        total = sum(self.requests)
        return {
            "url": self.url,
            "max_rps": self.max_rps,
            "held_rps": round(self.held(first_s, last_s), 2),
            "held_fraction": round(self.held(first_s, last_s) / self.max_rps, 3) if self.max_rps else None,
            "requests": total,
            "blocked_ratio": round(sum(self.blocked) / total, 4) if total else None,
            "throttled": any(source != "default" for _, _, source in self.limits),
            "min_concurrency": min((c for c, _, _ in self.limits), default=None),
        }


def many_settings(settings: Settings, work_dir: Path) -> Settings:
    private = private_namespace(settings, f"many-{uuid.uuid4().hex[:8]}", work_dir / "frontier")
    return private.model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=8, domain_delay_ms=0),
            "fetch": FetchSettings(allow_hosts="127.0.0.1"),
            "stack": settings.stack.model_copy(update={"data_dir": work_dir / "stack"}),
            "throttle": ThrottleSettings.model_construct().model_copy(
                update={
                    "offset_reset": "earliest",
                    "app_id": private.throttle.app_id,
                    "snapshot_path": str(work_dir / "throttle-snapshot.json"),
                }
            ),
        }
    )


def run_many(settings: Settings, duration_s: float = 90.0, healthy: int = 45) -> list[HostSeries]:
    """Crawl for ``duration_s``; one series per host, blocking hosts first."""
    blocking_spec = SiteSpec(seed=31, hosts=len(LIMITS), pages_per_host=2000, latency_ms=20)
    healthy_spec = SiteSpec(seed=37, hosts=healthy, pages_per_host=300, latency_ms=20)
    prepare_data_plane(settings)
    with SampleSite(blocking_spec) as blocking, SampleSite(healthy_spec) as good:
        for host, max_rps in enumerate(LIMITS):
            blocking.set_anti_bot(host, AntiBot(max_rps=max_rps, mode="captcha"))
        series = [HostSeries(url, rps) for url, rps in zip(blocking.urls, LIMITS, strict=True)]
        series += [HostSeries(url, None) for url in good.urls]
        sites = [(blocking, series[: len(LIMITS)]), (good, series[len(LIMITS) :])]
        urls, seeds = _seeds(blocking, good)  # tens of thousands: not timed
        with ServiceGroup.build(settings, SERVICES):
            view = ThrottleView(settings).start()
            try:
                wait_for_processor(settings)
                last = {id(site): site.stats().hosts for site, _ in sites}
                submitter = threading.Thread(target=_submit, args=(settings, urls, seeds), daemon=True)
                submitter.start()
                started = time.monotonic()
                while (elapsed := time.monotonic() - started) < duration_s:
                    time.sleep(max(0.0, round(elapsed) + 1 - elapsed))
                    for site, rows in sites:
                        now = site.stats().hosts
                        for row, before, after in zip(rows, last[id(site)], now, strict=True):
                            row.requests.append(after.total_requests - before.total_requests)
                            row.blocked.append(_blocked(after) - _blocked(before))
                            limits = view.details(domain_of(row.url))
                            row.limits.append((limits.concurrency, limits.delay_ms, limits.source))
                        last[id(site)] = now
                submitter.join(timeout=60)
            finally:
                view.close()
    return series


def _seeds(*sites: SampleSite) -> tuple[list[str], list[str]]:
    """Every page of every host, interleaved across hosts (every domain has work at once), and the
    hosts' home pages (the job's scope)."""
    per_host: dict[str, list[str]] = {}
    for site in sites:
        for url in sorted(site.reachable_urls()):
            per_host.setdefault(domain_of(url), []).append(url)
    urls = [url for row in zip_longest(*per_host.values()) for url in row if url is not None]
    return urls, [seed for site in sites for seed in site.seeds]


def _submit(settings: Settings, urls: list[str], seeds: list[str]) -> None:
    spec = JobSpec(job_id=f"many-{uuid.uuid4().hex[:6]}", allowed_domains=default_scope(seeds))
    JobClient(settings).submit(spec, urls)


def _blocked(host: Any) -> int:
    return int(host.by_status.get("429", 0)) + int(host.challenges)
