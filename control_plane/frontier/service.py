"""The frontier: turns discovered URLs into crawl tasks, without duplicates, within scope, politely.

For each discovered URL, in order: canonicalize → the job must be known → scope rules → dedup
(per job, persistent, bounded memory) → the job's page limit → robots.txt → admission. Admission
issues a task to its priority lane while the domain has fewer than k x P_d tasks outstanding and
the fleet fewer than D_max; otherwise the URL waits in the durable backlog. Fetchers report
every task's progress back; a final report frees a slot and releases the domain's backlog. Past
D_max the frontier stops consuming discovery altogether until the fleet drains to 90%.

Throttle commands (a :class:`~dualplane.core.limits.LimitsSource`, started with the consumer):
P_d is the domain's current concurrency there, not the default. A domain's permit queue is sized
from it when created, and resized fleet-wide when a command (or an override expiring) changes it:
raised at once, lowered by destroying free permits and paying the rest back as held ones return
(the debt, see :mod:`control_plane.amqp.permits`). A paused domain gets no new tasks: its URLs wait in
the backlog, which is released when the pause ends.

Nothing is acked before it is safe: a task is published with a confirm, then the state (counters,
backlog) is committed and the seen-set flushed, then the discovery message is acked. A crash in
between can repeat a URL, never lose one. Only one frontier is active at a time (the discovery
and reports queues have a single active consumer); others wait as hot standbys.

Settings: ``DUALPLANE_FRONTIER_*``, ``DUALPLANE_LIMIT_DOMAIN_CONCURRENCY`` (P_d without a command),
``DUALPLANE_FETCH_USER_AGENT`` (robots.txt), ``DUALPLANE_QUEUE_*``, ``DUALPLANE_TOPIC_THROTTLE_STATE``.
"""

from __future__ import annotations

import logging
import threading
import time

from pika.adapters.blocking_connection import BlockingChannel

from control_plane.amqp import permits
from control_plane.amqp.consumer import ControlConsumer, Delivery, QueueBinding
from control_plane.amqp.exceptions import MessageRejected
from control_plane.amqp.messages import CrawlTask, DiscoveredUrl, JobSpec, TaskReport
from control_plane.amqp.publisher import publish
from control_plane.amqp.topology import Topology
from control_plane.frontier.jobs import JobSnapshots
from control_plane.frontier.robots import RobotsCache
from control_plane.frontier.scope import ScopeRules
from control_plane.frontier.seen import SeenSet
from control_plane.frontier.store import FrontierState
from dualplane.core.limits import Limits, LimitsSource
from dualplane.core.settings import Settings
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import DEFAULT_TRACKING_PARAMS, canonicalize, domain_of, url_key

log = logging.getLogger(__name__)

RESUME_FRACTION = 0.9
BACKLOG_SWEEP_S = 1.0
BACKPRESSURE_EVERY_S = 0.1  # how often discovery handling re-checks D_max between ticks
# How often every throttled or indebted domain's permits are checked: catches overrides and pauses
# that ran out (no message marks that) and pays debts back as held permits return.
PERMIT_SWEEP_S = 1.0


class Frontier:
    """The frontier's handlers and state; :meth:`consumer` wires them to RabbitMQ."""

    def __init__(self, settings: Settings, view: LimitsSource, robots: RobotsCache | None = None) -> None:
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
        self.view = view
        view.subscribe(self._on_limits_changed)
        self._scopes: dict[str, ScopeRules] = {}
        self._last_sweep = 0.0
        self._last_snapshot = 0.0
        self._last_permit_sweep = 0.0
        self._last_backpressure = 0.0
        self._changed_lock = threading.Lock()
        self._changed: set[str] = set()  # domains whose limits changed, from the view's thread

    # wiring

    def consumer(self) -> ControlConsumer:
        """The consumer of discovery and reports; starts the throttle view first (blocks until read)."""
        self.view.start()
        bindings = {
            self.topology.discovery_queue: QueueBinding(self.on_discovery, (JobSpec, DiscoveredUrl)),
            self.topology.reports_queue: QueueBinding(self.on_report, (TaskReport,)),
        }
        self.consumer_ = ControlConsumer(
            self.settings, bindings, prefetch=100, on_tick=self.on_tick, name="frontier"
        )
        return self.consumer_

    def close(self) -> None:
        self.view.close()
        self.seen.flush()
        self.seen.close()
        self.state.close()
        self.robots.close()

    @property
    def slots_per_domain(self) -> int:
        """k x P_d with the default P_d: how many tasks of an unthrottled domain may be outstanding."""
        return self.settings.frontier.outstanding_per_slot * self.settings.limits.domain_concurrency

    def slots_for(self, domain: str, limits: Limits | None = None) -> int:
        """k x P_d with the domain's current P_d (a throttle command's, or the default)."""
        concurrency = (limits or self.view.details(domain)).concurrency
        return self.settings.frontier.outstanding_per_slot * concurrency

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
        now = time.monotonic()
        if self.consumer_ is not None and now - self._last_backpressure >= BACKPRESSURE_EVERY_S:
            # Between ticks too: a fast frontier would otherwise take in a whole tick's worth of
            # discovery (hundreds of URLs) past D_max. Rate-limited: the check counts outstanding tasks.
            self._last_backpressure = now
            self._apply_backpressure(self.consumer_)

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
        if consumer.channel:
            sweep = now - self._last_permit_sweep >= PERMIT_SWEEP_S
            if sweep:
                self._last_permit_sweep = now
            self._obey_throttle(consumer.channel, sweep=sweep)
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
        limits = self.view.details(task.domain)
        if outstanding < self.slots_for(task.domain, limits) and not fleet_full and not limits.paused:
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
        limits = self.view.details(domain)
        if limits.paused:
            return  # released by the sweep once the pause is over
        outstanding, _, _ = self.state.domain(domain)
        room = min(
            self.slots_for(domain, limits) - outstanding,
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
        if declared_at is None or now - declared_at > permits.REFILL_AFTER_S:
            wanted = self.view.details(domain).concurrency  # a throttled new domain starts throttled
            permits.refill(channel, self.topology, domain, wanted)
            self.state.set_permits(domain, wanted, now)
        elif now - declared_at > permits.REFRESH_AFTER_S:
            permits.declare(channel, self.topology, domain)
            self.state.set_permits(domain, count, now, self.state.permit_ledger(domain).debt)

    # throttle commands

    def _on_limits_changed(self, domain: str, limits: Limits) -> None:
        """The view's callback, on its own thread: note the domain for the consumer thread."""
        with self._changed_lock:
            self._changed.add(domain)

    def _obey_throttle(self, channel: BlockingChannel, *, sweep: bool) -> None:
        """Resize the permits of domains whose P_d changed; on a sweep, of every throttled or
        indebted domain (expired overrides and pauses, debts to pay)."""
        with self._changed_lock:
            domains, self._changed = self._changed, set()
        if sweep:
            domains |= self.view.domains() | set(self.state.domains_in_debt())
        for domain in sorted(domains):
            self._resize_permits(channel, domain)

    def _resize_permits(self, channel: BlockingChannel, domain: str) -> None:
        _, _, declared_at = self.state.domain(domain)
        if declared_at is None or time.time() - declared_at > permits.REFILL_AFTER_S:
            return  # no live permit queue: the next task refills it from the current limits
        ledger = self.state.permit_ledger(domain)
        target = self.view.details(domain).concurrency
        if ledger.target == target and ledger.debt == 0:
            return
        permits.declare(channel, self.topology, domain)  # a get or publish on a missing queue would fail
        resized = permits.resize(channel, self.topology, domain, ledger, target)
        # Commit at once: added or destroyed permits cannot be taken back, the ledger must say so.
        self.state.set_permit_ledger(domain, resized)
        self.state.commit()
        if resized.target != ledger.target:
            log.info(
                "permits for %s: %d -> %d (%d held permits still to destroy as they return)",
                domain, ledger.target, resized.target, resized.debt,
            )  # fmt: skip

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
