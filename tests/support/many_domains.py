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
    offered_rps: float | None = (
        None  # a healthy host's pages, one every 1 / offered_rps s (None: all at once)
    )
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
            "offered_rps": self.offered_rps,
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


def run_many(
    settings: Settings,
    duration_s: float = 90.0,
    healthy: int = 45,
    healthy_every_s: float | None = None,
    healthy_crawl_delay_s: float | None = None,
) -> list[HostSeries]:
    """Crawl for ``duration_s``; one series per host, blocking hosts first.

    The blocking hosts get every page of theirs at once (their sites' limits bind). The healthy
    hosts' pages come one per host every ``healthy_every_s`` (a fleet with capacity to spare: what a
    healthy host offers is what it should get, blockers or not), or all at once with None (then the
    fleet is saturated and shares itself out). With ``healthy_crawl_delay_s`` their robots.txt asks
    for that Crawl-delay. Both jobs take only the pages given (``max_depth`` 0).
    """
    blocking_spec = SiteSpec(seed=31, hosts=len(LIMITS), pages_per_host=2000, latency_ms=20)
    healthy_spec = SiteSpec(
        seed=37, hosts=healthy, pages_per_host=300, latency_ms=20, crawl_delay_s=healthy_crawl_delay_s
    )
    prepare_data_plane(settings)
    with SampleSite(blocking_spec) as blocking, SampleSite(healthy_spec) as good:
        for host, max_rps in enumerate(LIMITS):
            blocking.set_anti_bot(host, AntiBot(max_rps=max_rps, mode="captcha"))
        series = [HostSeries(url, rps) for url, rps in zip(blocking.urls, LIMITS, strict=True)]
        offered_rps = 1 / healthy_every_s if healthy_every_s else None
        series += [HostSeries(url, None, offered_rps) for url in good.urls]
        sites = [(blocking, series[: len(LIMITS)]), (good, series[len(LIMITS) :])]
        # A blocking host gets the pages it can take in the run at its limit, and half again: every
        # seed costs the frontier's admission, which shares the machine with the fetcher.
        blocking_pages = [
            host_pages[: int(max_rps * duration_s * 1.5) + 50]
            for host_pages, max_rps in zip(_pages(blocking), LIMITS, strict=True)
        ]
        healthy_pages = _pages(good)  # tens of thousands: not timed
        stop = threading.Event()
        with ServiceGroup.build(settings, SERVICES):
            view = ThrottleView(settings).start()
            submitters = [
                threading.Thread(target=_submit, args=(settings, "blocking", blocking_pages, None, stop)),
                threading.Thread(
                    target=_submit, args=(settings, "healthy", healthy_pages, healthy_every_s, stop)
                ),
            ]
            try:
                wait_for_processor(settings)
                last = {id(site): site.stats().hosts for site, _ in sites}
                for submitter in submitters:
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
            finally:
                stop.set()
                for submitter in submitters:
                    if submitter.ident is not None:
                        submitter.join(timeout=60)
                view.close()
    return series


def _pages(site: SampleSite) -> list[list[str]]:
    """Every page of every host, one list per host in the site's order of hosts."""
    per_host: dict[str, list[str]] = {domain_of(url): [] for url in site.urls}
    for url in sorted(site.reachable_urls()):
        per_host[domain_of(url)].append(url)
    return list(per_host.values())


def _submit(
    settings: Settings, name: str, pages: list[list[str]], every_s: float | None, stop: threading.Event
) -> None:
    """One job over ``pages``: all of them at once (interleaved across hosts, so every domain has
    work from the start), or with ``every_s`` the next page of each host every ``every_s``."""
    client = JobClient(settings)
    homes = [host_pages[0] for host_pages in pages]
    spec = JobSpec(job_id=f"{name}-{uuid.uuid4().hex[:6]}", allowed_domains=default_scope(homes), max_depth=0)
    rows = [[url for url in row if url is not None] for row in zip_longest(*pages)]
    if every_s is None:
        client.submit(spec, [url for row in rows for url in row])
        return
    next_s = time.monotonic()
    for row in rows:  # the same job again: the frontier keeps its rules, and takes the new seeds
        client.submit(spec, row)
        next_s += every_s
        if stop.wait(max(0.0, next_s - time.monotonic())):
            return


def _blocked(host: Any) -> int:
    return int(host.by_status.get("429", 0)) + int(host.challenges)
