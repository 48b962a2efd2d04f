"""The frontier: turns discovered URLs into crawl tasks, without duplicates, within scope, politely.

For each discovered URL, in order: canonicalize → the job must be known → scope rules → dedup
(per job, persistent, bounded memory) → the job's page limit → robots.txt → admission. Admission
issues a task to its priority lane while the domain has fewer than k x P_d tasks outstanding and
the fleet fewer than D_max; otherwise the URL waits in the durable backlog. Fetchers report
every task's progress back; a final report frees a slot and releases the domain's backlog. Past
D_max the frontier stops consuming discovery altogether until the fleet drains to 90%.

Nothing is acked before it is safe: a task is published with a confirm, then the state (counters,
backlog) is committed and the seen-set flushed, then the discovery message is acked. A crash in
between can repeat a URL, never lose one. Only one frontier is active at a time (the discovery
and reports queues have a single active consumer); others wait as hot standbys.

Settings: ``DUALPLANE_FRONTIER_*``, ``DUALPLANE_LIMIT_DOMAIN_CONCURRENCY`` (P_d),
``DUALPLANE_FETCH_USER_AGENT`` (robots.txt), ``DUALPLANE_QUEUE_*``.
"""

from __future__ import annotations

import logging
import time

from control_plane import permits
from control_plane.consumer import ControlConsumer, Delivery, QueueBinding
from control_plane.exceptions import InvalidUrl, MessageRejected
from control_plane.fetcher.ssrf import SsrfGuard
from control_plane.frontier.jobs import JobSnapshots
from control_plane.frontier.state import FrontierState
from control_plane.messages import CrawlTask, DiscoveredUrl, JobSpec, TaskReport
from control_plane.publisher import publish
from control_plane.robots import RobotsCache
from control_plane.scope import ScopeRules
from control_plane.seen import SeenSet
from control_plane.topology import Topology
from control_plane.urls import DEFAULT_TRACKING_PARAMS, canonicalize, domain_of, url_key
from dualplane.settings import Settings

log = logging.getLogger(__name__)

RESUME_FRACTION = 0.9
BACKLOG_SWEEP_S = 1.0


class Frontier:
    """The frontier's handlers and state; :meth:`consumer` wires them to RabbitMQ."""

    def __init__(self, settings: Settings, robots: RobotsCache | None = None) -> None:
        self.settings = settings
        self.topology = Topology(settings.queues)
        directory = settings.frontier_dir
        directory.mkdir(parents=True, exist_ok=True)
        self.state = FrontierState(directory / "frontier.sqlite")
        self.seen = SeenSet(
            directory / "seen.sqlite",
            exact_limit=settings.frontier.seen_exact_limit,
            expected_items=settings.frontier.seen_expected_items,
            false_positive_rate=settings.frontier.seen_false_positive_rate,
        )
        self.robots = robots or RobotsCache(settings.fetch.user_agent, ttl_s=settings.frontier.robots_ttl_s)
        extra = {p.strip() for p in settings.frontier.tracking_params.split(",") if p.strip()}
        self.strip_params = DEFAULT_TRACKING_PARAMS | frozenset(extra)
        self.snapshots = JobSnapshots(self.topology)
        self.guard = SsrfGuard.from_setting(settings.fetch.allow_hosts)
        self.consumer_: ControlConsumer | None = None
        self._scopes: dict[str, ScopeRules] = {}
        self._last_sweep = 0.0
        self._last_snapshot = 0.0

    # wiring

    def consumer(self) -> ControlConsumer:
        bindings = {
            self.topology.discovery_queue: QueueBinding(self.on_discovery, (JobSpec, DiscoveredUrl)),
            self.topology.reports_queue: QueueBinding(self.on_report, (TaskReport,)),
        }
        self.consumer_ = ControlConsumer(
            self.settings, bindings, prefetch=100, on_tick=self.on_tick, name="frontier"
        )
        return self.consumer_

    def close(self) -> None:
        self.seen.flush()
        self.seen.close()
        self.state.close()
        self.robots.close()

    @property
    def slots_per_domain(self) -> int:
        """k x P_d: how many tasks of one domain may be outstanding at once."""
        return self.settings.frontier.outstanding_per_slot * self.settings.limits.domain_concurrency

    # handlers

    def on_discovery(self, delivery: Delivery) -> None:
        message = delivery.message
        if isinstance(message, JobSpec):
            self.state.save_job(message)
            self._scopes.pop(message.job_id, None)
            self.snapshots.mark(message.job_id)
        else:
            self._consider(message, delivery)
        self.state.commit()
        self.seen.flush()

    def on_report(self, delivery: Delivery) -> None:
        report: TaskReport = delivery.message
        became_final = self.state.task_reported(report.task_id, report.job_id, report.domain, report.stage)
        if became_final:
            self._release_backlog(report.domain, delivery)
        self.snapshots.mark(report.job_id)
        self.state.commit()

    def on_tick(self, consumer: ControlConsumer) -> None:
        now = time.monotonic()
        if now - self._last_snapshot >= self.settings.frontier.snapshot_interval_s and consumer.channel:
            self._last_snapshot = now
            self.snapshots.publish_marked(consumer.channel, self.state)
        self._apply_backpressure(consumer)
        if now - self._last_sweep >= BACKLOG_SWEEP_S and consumer.channel:
            self._last_sweep = now
            for domain in self.state.backlog_domains():
                self._release_backlog(domain, None)
            self.state.commit()

    # the pipeline

    def _consider(self, found: DiscoveredUrl, delivery: Delivery) -> None:
        job = self.state.job(found.job_id)
        if job is None:
            raise MessageRejected(
                f"job {found.job_id!r} is unknown to the frontier: submit jobs with `dualplane crawl`, "
                "which sends the job's rules before its seeds"
            )
        if found.seed:
            self.state.count(job.job_id, seeded=1)
        self.snapshots.mark(job.job_id)
        try:
            url = canonicalize(found.url, self.strip_params)
        except InvalidUrl as error:
            log.debug("job %s: invalid URL %r: %s", job.job_id, found.url, error)
            self.state.count(job.job_id, invalid=1)
            return
        verdict = self._scope(job).check(url, found.depth)
        if not verdict.allowed:
            self.state.count(job.job_id, out_of_scope=1)
            return
        if not self.seen.add(url_key(f"{job.job_id} {url}")):
            self.state.count(job.job_id, duplicates=1)
            return
        if job.max_pages is not None and self.state.pages_admitted(job.job_id) >= job.max_pages:
            self.state.count(job.job_id, over_limit=1)
            return
        delay_ms = None
        # robots.txt is fetched by the frontier itself: never from an address the fetcher would
        # refuse (SSRF). Such URLs are admitted unchecked, and the fetcher records the refusal.
        if job.obey_robots and self.guard.allows(url):
            robots = self.robots.check(url)
            if not robots.allowed:
                self.state.count(job.job_id, disallowed=1)
                return
            delay_ms = int(robots.crawl_delay_s * 1000) if robots.crawl_delay_s else None
        task = CrawlTask(
            job_id=job.job_id,
            trace_id=found.trace_id,
            url=url,
            domain=domain_of(url),
            depth=found.depth,
            priority=found.priority or job.priority,
            max_attempts=self.settings.frontier.max_attempts,
            crawl_delay_ms=delay_ms,
        )
        self.state.count(job.job_id, discovered=1)
        self._admit(task, delivery)

    def _admit(self, task: CrawlTask, delivery: Delivery) -> None:
        outstanding, _, _ = self.state.domain(task.domain)
        fleet_full = self.state.total_outstanding() >= self.settings.frontier.max_outstanding
        if outstanding < self.slots_per_domain and not fleet_full:
            self._issue(task, delivery.consumer)
        else:
            self.state.push_backlog(task.domain, task.job_id, task.model_dump_json())
            self.state.count(task.job_id, backlog=1)

    def _issue(self, task: CrawlTask, consumer: ControlConsumer) -> None:
        channel = consumer.channel
        assert channel is not None
        self._ensure_permits(task.domain, consumer)
        publish(channel, self.topology.tasks_exchange, task.priority, task)
        self.state.task_issued(task.task_id, task.job_id, task.domain)

    def _release_backlog(self, domain: str, delivery: Delivery | None) -> None:
        consumer = delivery.consumer if delivery else self.consumer_
        if consumer is None or consumer.channel is None:
            return
        outstanding, _, _ = self.state.domain(domain)
        room = min(
            self.slots_per_domain - outstanding,
            self.settings.frontier.max_outstanding - self.state.total_outstanding(),
        )
        for row_id, task_json in list(self.state.backlog_for(domain, max(room, 0))):
            task = CrawlTask.model_validate_json(task_json)
            self._issue(task, consumer)
            self.state.drop_backlog(row_id)
            self.state.count(task.job_id, backlog=-1)
            self.snapshots.mark(task.job_id)

    def _ensure_permits(self, domain: str, consumer: ControlConsumer) -> None:
        channel = consumer.channel
        assert channel is not None
        _, count, declared_at = self.state.domain(domain)
        now = time.time()
        wanted = self.settings.limits.domain_concurrency
        if declared_at is None or now - declared_at > permits.REFILL_AFTER_S:
            permits.refill(channel, self.topology, domain, wanted)
            self.state.set_permits(domain, wanted, now)
        elif now - declared_at > permits.REFRESH_AFTER_S:
            permits.declare(channel, self.topology, domain)
            self.state.set_permits(domain, count, now)

    def _apply_backpressure(self, consumer: ControlConsumer) -> None:
        total = self.state.total_outstanding()
        limit = self.settings.frontier.max_outstanding
        queue = self.topology.discovery_queue
        if total >= limit and queue not in consumer.paused:
            log.warning("frontier: %d tasks outstanding (limit %d); pausing discovery", total, limit)
            consumer.pause(queue)
        elif total < limit * RESUME_FRACTION and queue in consumer.paused:
            consumer.resume(queue)

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
