"""The road a discovered URL takes into the frontier, for a whole batch of URLs at once.

For each URL, in order: canonicalize → the job's scope → its domain's profile scope → dedup (per
job) → the job's page limit → its domain's page budget → robots.txt (the domain rules:
``site_rules``). What survives becomes a :class:`~brokers.amqp.messages.CrawlTask`; the frontier
then issues it at once or parks it in the backlog (``service``). Counters are summed for the batch
and written once, and new seen keys are only collected here: they join the seen set when the
frontier commits, so a batch that fails half way leaves no trace.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from dualplane.brokers.amqp.messages import CrawlTask, JobSpec, Priority, new_id
from dualplane.control_plane.frontier.exceptions import RobotsPending
from dualplane.control_plane.frontier.robots import RobotsCache
from dualplane.control_plane.frontier.scope import ScopeRules
from dualplane.control_plane.frontier.seen import SeenSet
from dualplane.control_plane.frontier.site_rules import NoProfiles, SiteRules
from dualplane.control_plane.frontier.store import FrontierState
from dualplane.core.web.domains import shard_bucket
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import canonicalize, domain_of, url_key

SAFE_HOST_TTL_S = 600.0  # how long an SSRF verdict on a host is trusted (it resolves DNS)
# Links repeat (menus, listings: about two in three on the sample site): a link already known to be
# in the seen set is counted as a duplicate at the cost of a dict lookup, not a canonicalization and
# a seen-set lookup. Only links whose keys are committed are remembered (see ``remember``).
KNOWN_LINKS = 200_000


@dataclass
class Batch:
    """URLs found together: one page's links to one shard, a slice of a seed list, a redirect."""

    job_id: str
    urls: Iterable[str]
    depth: int = 0
    priority: Priority | None = None
    seed: bool = False
    lastmods_ms: tuple[int | None, ...] | None = None  # a sitemap's lastmod per URL (see DiscoveredBatch)


@dataclass
class Admitted:
    """What a batch yields: tasks to issue or park, counters to add, seen keys to record."""

    tasks: list[CrawlTask] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    keys: dict[bytes, int] = field(default_factory=dict)  # new seen key -> its site's bucket
    known: list[tuple[str, str]] = field(default_factory=list)  # (job, raw URL) now in the seen set
    waiting: set[str] = field(default_factory=set)  # origins whose robots.txt is being fetched
    # A monitor's job: canonical URL -> its sitemap lastmod (ms), for its new tasks and for URLs its
    # schedule holds already (those are duplicates: the schedule revisits them).
    lastmods_ms: dict[str, int] = field(default_factory=dict)
    scheduled: list[str] = field(default_factory=list)  # URLs of a monitor's job its schedule holds


class Admission:
    """The per-URL rules of one frontier shard; :meth:`consider` runs a batch through them."""

    def __init__(
        self,
        state: FrontierState,
        seen: SeenSet,
        robots: RobotsCache,
        guard: SsrfGuard,
        *,
        strip_params: frozenset[str],
        max_attempts: int,
        sites: SiteRules | None = None,
    ) -> None:
        self.state = state
        self.seen = seen
        self.robots = robots
        self.guard = guard
        self.strip_params = strip_params
        self.max_attempts = max_attempts
        self.sites = sites or SiteRules(state, NoProfiles())
        self._scopes: dict[str, ScopeRules] = {}
        self._safe_hosts: dict[str, tuple[bool, float]] = {}
        self._known: OrderedDict[tuple[str, str], None] = OrderedDict()

    def remember(self, known: list[tuple[str, str]]) -> None:
        """Raw links whose seen keys are now committed: later sightings are duplicates at once."""
        for link in known:
            self._known[link] = None
            self._known.move_to_end(link)
        while len(self._known) > KNOWN_LINKS:
            self._known.popitem(last=False)

    def forget_job(self, job_id: str) -> None:
        """The job's rules changed: build its scope anew."""
        self._scopes.pop(job_id, None)

    def consider(self, job: JobSpec, batch: Batch, pending: dict[bytes, int]) -> Admitted:
        """Run ``batch`` through the rules; ``pending`` holds keys seen earlier in this commit.

        Raises :class:`RobotsPending` when a URL needs a robots.txt not known yet: its fetch is
        started, and the batch is to be considered again, whole, once it has arrived.
        """
        admitted = Admitted()
        counts = admitted.counts
        urls = list(batch.urls)
        if batch.seed:
            counts["seeded"] += len(urls)
        scope = self._scope(job)
        room = None if job.max_pages is None else job.max_pages - self.state.pages_admitted(job.job_id)
        lastmods = batch.lastmods_ms or ()
        for index, raw in enumerate(urls):
            if (job.job_id, raw) in self._known:
                counts["duplicates"] += 1
                continue
            try:
                url = canonicalize(raw, self.strip_params)
                domain = domain_of(url)
            except InvalidUrl:
                counts["invalid"] += 1
                continue
            if not scope.check(url, batch.depth).allowed or self.sites.rejection(url, domain, batch.depth):
                counts["out_of_scope"] += 1
                continue
            if job.monitor is not None and self._scheduled(job.monitor, url, lastmods, index, admitted):
                counts["duplicates"] += 1  # a later visit finds it again: the schedule revisits it
                continue
            key = url_key(f"{job.job_id} {url}")
            admitted.known.append((job.job_id, raw))
            if key in pending or key in admitted.keys or key in self.seen:
                counts["duplicates"] += 1
                continue
            admitted.keys[key] = shard_bucket(domain)
            if (room is not None and room <= 0) or not self.sites.has_room(job, domain):
                counts["over_limit"] += 1
                continue
            task = self._task(job, batch, url, domain, admitted.waiting)
            if task is None:
                counts["disallowed"] += 1
                continue
            self.sites.take(job, domain)
            if room is not None:
                room -= 1
            counts["discovered"] += 1
            admitted.tasks.append(task)
        if admitted.waiting:
            raise RobotsPending(admitted.waiting)
        return admitted

    def _scheduled(
        self, monitor: str, url: str, lastmods: tuple[int | None, ...], index: int, admitted: Admitted
    ) -> bool:
        """Whether the monitor's schedule holds ``url`` already; notes its sitemap lastmod either way."""
        lastmod = lastmods[index] if index < len(lastmods) else None
        if lastmod is not None:
            admitted.lastmods_ms[url] = lastmod
        if self.state.schedule.has(monitor, url):
            admitted.scheduled.append(url)
            return True
        return False

    def _task(self, job: JobSpec, batch: Batch, url: str, domain: str, waiting: set[str]) -> CrawlTask | None:
        """The task for ``url``, or None when robots.txt disallows it or is not known yet (then its
        origin joins ``waiting``)."""
        delay_ms = None
        # robots.txt is fetched by the frontier itself: never from an address the fetcher would
        # refuse (SSRF). Such URLs are admitted unchecked, and the fetcher records the refusal.
        if job.obey_robots and self.safe(url):
            robots = self.robots.ready(url)
            if robots is None:
                waiting.add(self.robots.origin_of(url))
                return None
            if not robots.allowed:
                return None
            delay_ms = int(robots.crawl_delay_s * 1000) if robots.crawl_delay_s else None
        return CrawlTask(
            job_id=job.job_id,
            trace_id=new_id(),
            url=url,
            domain=domain,
            depth=batch.depth,
            priority=batch.priority or job.priority,
            max_attempts=self.max_attempts,
            crawl_delay_ms=delay_ms,
            extractor=job.extractor,
        )

    def safe(self, url: str) -> bool:
        """The SSRF guard's verdict, cached per host: it resolves the name, which takes time."""
        host = urlsplit(url).netloc
        now = time.monotonic()
        cached = self._safe_hosts.get(host)
        if cached is None or now - cached[1] > SAFE_HOST_TTL_S:
            cached = (self.guard.allows(url), now)
            self._safe_hosts[host] = cached
        return cached[0]

    def _scope(self, job: JobSpec) -> ScopeRules:
        rules = self._scopes.get(job.job_id)
        if rules is None:
            rules = ScopeRules(
                allowed_domains=frozenset(job.allowed_domains),
                allow_patterns=job.allow_patterns,
                deny_patterns=job.deny_patterns,
                max_depth=job.max_depth,
            )
            self._scopes[job.job_id] = rules
        return rules
