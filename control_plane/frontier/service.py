"""A frontier shard: turns its sites' discovered URLs into crawl tasks, exactly once, politely.

Sites are spread over ``DUALPLANE_QUEUE_FRONTIER_SHARDS`` shards (``core.web.domains``).
Shard ``i`` consumes one queue, which gets both the discovery and the fetchers' task reports for
its sites, with a single active consumer: any number of frontiers may serve a shard, one works,
the others stand by and take over when its connection drops.

A pass over the messages that arrived: each discovery batch goes through :mod:`.admission`;
admitted tasks are issued while the domain has fewer than k x P_d tasks outstanding, fewer if it
is paced (:mod:`.slots`; not counting those waiting out a retry delay), and the shard fewer than
D_max, else parked in the durable backlog;
a final report, or a retry's, frees a slot and releases the domain's backlog. Then one commit for
the whole pass, in this order:

1. the changed state rows and new seen keys go to the shard's changelog in Kafka, in one
   transaction (:mod:`.changelog`), then to the local SQLite (a cache of the changelog);
2. the pass's tasks are published and its messages acked in one RabbitMQ transaction.

A crash before (1) loses nothing: the messages come again and are handled afresh. A crash between
(1) and (2) is why each handled message is recorded with the tasks it published: when it comes
again it publishes exactly those tasks (same ids) instead of being handled twice. So however a
frontier dies, each URL of a job becomes exactly one task.

Becoming the active consumer (the first delivery after a connect) means taking the shard over:
the changelog is opened, which fences the previous owner in Kafka, and read to its end into the
local state (a standby keeps warm by reading it every few seconds). Throttle commands come through
a :class:`~core.limits.LimitsSource` (P_d and pauses; see :mod:`.domain_permits`).

Features live in rooms (:mod:`.rooms`): job control (:mod:`.job_control`), monitors
(:mod:`.monitor_room`) and discovery waiting for robots.txt (:mod:`.robots_wait`), beside the
frontier's own discovery, reports and standby work. Their handlers make one table keyed by message
type, which is also what the shard's queue is bound to; their periodic work is a list of sweeps.

Settings: ``DUALPLANE_FRONTIER_*``, ``DUALPLANE_QUEUE_*``, ``DUALPLANE_LIMIT_DOMAIN_CONCURRENCY``,
``DUALPLANE_FETCH_USER_AGENT`` (robots.txt), ``DUALPLANE_TOPIC_FRONTIER_CHANGELOG``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager

from dualplane import schemas
from dualplane.brokers.amqp import permits
from dualplane.brokers.amqp.consumer import ControlConsumer, Delivery, QueueBinding
from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import (
    CrawlTask,
    DiscoveredBatch,
    DiscoveredUrl,
    JobSpec,
    TaskReport,
    TaskReports,
    Wake,
    new_id,
)
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier import metrics
from dualplane.control_plane.frontier.admission import Admission, Batch
from dualplane.control_plane.frontier.changelog import Changelog, ensure_changelog, seen_records
from dualplane.control_plane.frontier.domain_permits import DomainPermits
from dualplane.control_plane.frontier.exceptions import ChangelogUnavailable, RobotsPending
from dualplane.control_plane.frontier.job_control import JobControl
from dualplane.control_plane.frontier.jobs import JobSnapshots, SideRecord, ensure_progress_topic
from dualplane.control_plane.frontier.monitor_room import MonitorRoom
from dualplane.control_plane.frontier.monitors import Monitors
from dualplane.control_plane.frontier.restore import catch_up
from dualplane.control_plane.frontier.robots import RobotsCache
from dualplane.control_plane.frontier.robots_wait import RobotsWaiting
from dualplane.control_plane.frontier.rooms import Handler, Room, Sweep, handler_table, run_due, sweep_list
from dualplane.control_plane.frontier.schedule_events import ScheduleEvents
from dualplane.control_plane.frontier.seen import SeenSet
from dualplane.control_plane.frontier.site_rules import SiteRules
from dualplane.control_plane.frontier.site_scopes import SiteScopes
from dualplane.control_plane.frontier.slots import DomainSlots
from dualplane.control_plane.frontier.store import FrontierState
from dualplane.core.limits import Limits, LimitsSource
from dualplane.core.logs import page_context, page_of
from dualplane.core.settings import Settings
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import DEFAULT_TRACKING_PARAMS

log = logging.getLogger(__name__)

Settle = tuple[Delivery, Exception | None]
"""A handled delivery and what became of it: None (ack), MessageRejected (dead letter), else retry."""

BACKLOG_SWEEP_S = 1.0
PERMIT_SWEEP_S = 1.0  # catches overrides and pauses that ran out (no message marks that)
WARM_EVERY_S = 5.0  # how often a standby reads the changelog it will need on takeover
WAKE_RETRY_S = 2.0  # after Kafka refused a pass with no message to redo, try to take the shard over again
# A standby nudges its shard queue this often: if the owner died since, the broker made this standby
# (or another) the active consumer, and only a delivery tells it so (see Wake).
STANDBY_WAKE_EVERY_S = 10.0
HANDLED_KEPT_S = 7 * 86_400.0  # a handled message whose ack was committed but not recorded as such
HANDLED_SWEEP_S = 60.0


class Frontier:
    """One shard's handlers, state and changelog; :meth:`consumer` wires them to RabbitMQ."""

    def __init__(
        self,
        settings: Settings,
        view: LimitsSource,
        *,
        shard: int,
        state: FrontierState,
        seen: SeenSet,
        robots: RobotsCache,
        admission: Admission,
        monitors: Monitors,
        changelog: Changelog,
        scopes: SiteScopes,
    ) -> None:
        """A shard over collaborators already built (:meth:`from_settings` builds them from settings)."""
        self.settings = settings
        self.shard = shard
        self.topology = Topology(settings.queues)
        self.state = state
        self.seen = seen
        self.robots = robots
        self.admission = admission
        self.scopes = scopes  # the profiles' scope rules, which admission reads
        self.view = view
        self.permits = DomainPermits(self.state, self.topology, view)
        self.slots = DomainSlots(
            per_slot=settings.frontier.outstanding_per_slot,
            transit_s=settings.frontier.paced_transit_s,
            jitter=settings.fetch.delay_jitter,
            floor_delay_ms=settings.limits.domain_delay_ms,
        )
        self.snapshots = JobSnapshots(settings.topics.job_progress, shard)
        self.monitors = monitors
        self._held_snapshots: list[SideRecord] = []
        self.changelog = changelog
        self.consumer_: ControlConsumer | None = None
        self.active = False
        self._inbox: list[Delivery] = []  # the pass's deliveries, handled at its commit
        self._outbox: list[CrawlTask] = []  # tasks to publish with the pass's commit
        self._pass_keys: dict[bytes, int] = {}  # new seen keys of the pass -> site bucket
        self._pass_known: list[tuple[str, str]] = []  # raw links whose keys the pass commits
        self._pass_messages: list[str] = []  # handled in this pass: forgotten once their acks are committed
        self._committed_messages: list[str] = []
        self._last_pass_s = 0.0
        self.job_control = JobControl(self.state, self.snapshots, self._release_backlog)
        self.monitor_room = MonitorRoom(
            monitors, self.snapshots, admission=admission, robots=robots,
            has_room=self._has_room, issue=self._issue, hold=self._held_snapshots.extend,
        )  # fmt: skip
        # Discovery waiting for robots.txt files still being fetched (RobotsPending), unacked, with
        # the origins it waits for: handled in the first pass after they have all arrived.
        self.robots_waiting = RobotsWaiting(robots, self.snapshots)
        rooms: list[Room] = [self, self.job_control, self.monitor_room, self.robots_waiting]
        self.handlers_ = handler_table(rooms)
        self.sweeps_ = sweep_list(rooms)

    @classmethod
    def from_settings(
        cls, settings: Settings, view: LimitsSource, *, shard: int = 0, robots: RobotsCache | None = None
    ) -> Frontier:
        """The shard's collaborators from settings: its directory and SQLite files, robots.txt cache,
        admission, monitors and changelog (nothing connects to a broker before :meth:`consumer`)."""
        directory = settings.frontier_dir / f"shard-{shard}"
        directory.mkdir(parents=True, exist_ok=True)
        state = FrontierState(directory / "frontier.sqlite")
        frontier = settings.frontier
        seen = SeenSet(
            directory / "seen.sqlite",
            exact_limit=frontier.seen_exact_limit,
            expected_items=frontier.seen_expected_items,
            false_positive_rate=frontier.seen_false_positive_rate,
        )
        guard = SsrfGuard.from_setting(settings.fetch.allow_hosts)
        robots = robots or RobotsCache(
            settings.fetch.user_agent,
            guard=guard,
            ttl_s=frontier.robots_ttl_s,
            fetch_timeout_s=frontier.robots_timeout_s,
        )
        extra = {p.strip() for p in frontier.tracking_params.split(",") if p.strip()}
        scopes = SiteScopes(settings.kafka, settings.topics.profiles)  # followed from consumer()
        admission = Admission(
            state,
            seen,
            robots,
            guard,
            strip_params=DEFAULT_TRACKING_PARAMS | frozenset(extra),
            max_attempts=frontier.max_attempts,
            sites=SiteRules(state, scopes),
        )
        codec = schemas.codec_for(settings)
        changes = settings.topics.changes
        events = ScheduleEvents(changes, lambda record: codec.encode("change_event", record, topic=changes))
        monitors = Monitors(state, settings.topics.job_progress, shard, events=events,
                            gone_after=frontier.monitor_gone_after)  # fmt: skip
        changelog = Changelog(settings.kafka, settings.topics.frontier_changelog, shard)
        return cls(settings, view, shard=shard, state=state, seen=seen, robots=robots, admission=admission,
                   monitors=monitors, changelog=changelog, scopes=scopes)  # fmt: skip

    # the frontier's own room: discovery, reports, and the shard's standby and owner work

    def handlers(self) -> Mapping[type, Handler]:
        return {
            JobSpec: self._job,
            DiscoveredBatch: self._discovered_batch,
            DiscoveredUrl: self._discovered_url,
            TaskReport: self._report,
            TaskReports: self._reports,
            Wake: _woken,
        }

    def sweeps(self) -> Sequence[Sweep]:
        return (
            Sweep("standby wake", STANDBY_WAKE_EVERY_S, self._standby_wake, when="standby"),
            Sweep("warm", WARM_EVERY_S, self._warm, when="standby"),
            Sweep("permit changes", 0.0, lambda: self.permits.obey(sweep=False)),
            Sweep("permits", PERMIT_SWEEP_S, lambda: self.permits.obey(sweep=True)),
            Sweep("backlog", BACKLOG_SWEEP_S, self._release_backlogs),
            Sweep("handled", HANDLED_SWEEP_S, self._forget_old_handled),
            Sweep("snapshot", self.settings.frontier.snapshot_interval_s, self._hold_job_snapshots,
                  when="commit"),
        )  # fmt: skip

    def sweep(self, name: str) -> Sweep:
        return next(sweep for sweep in self.sweeps_ if sweep.name == name)

    # wiring

    def consumer(self) -> ControlConsumer:
        """The shard's consumer; first starts the limits view and warms the state from the changelog."""
        self.view.start()
        self.scopes.start()
        ensure_changelog(self.settings.kafka, self.settings.topics.frontier_changelog, self.topology.shards)
        ensure_progress_topic(self.settings)
        self._warm()
        kinds = tuple(self.handlers_)  # every message type some room handles, and no other
        bindings = {self.topology.frontier_queue(self.shard): QueueBinding(self.on_message, kinds)}
        self.consumer_ = ControlConsumer(
            self.settings, bindings, prefetch=200, name=f"frontier-{self.shard}", transactional=True,
            on_connected=self._on_connected, on_tick=self._on_tick, before_commit=self._commit,
        )  # fmt: skip
        return self.consumer_

    def close(self) -> None:
        self.changelog.close()
        self.view.close()
        self.scopes.close()
        self.seen.close()
        self.state.close()
        self.robots.close()

    @property
    def slots_per_domain(self) -> int:
        """How many tasks of an unthrottled domain without a Crawl-delay may be outstanding."""
        limits = self.settings.limits
        return self.slots.for_domain("", Limits(limits.domain_concurrency, limits.domain_delay_ms, False))

    def slots_for(self, domain: str, limits: Limits | None = None) -> int:
        """How many of the domain's tasks may be outstanding under its current limits (:mod:`.slots`)."""
        return self.slots.for_domain(domain, limits or self.view.details(domain))

    # lifecycle: standby, then owner

    def _on_connected(self, consumer: ControlConsumer) -> None:
        """A new connection: whatever this process did not commit is gone, and it may no longer own
        the shard (a standby may have taken over), so it waits for a delivery to find out."""
        self._deactivate()
        # If the broker made us the owner, nothing else may tell us.
        self.sweep("standby wake").ask(time.monotonic())
        assert consumer.connection is not None
        self.permits.channel = consumer.connection.channel()
        self.permits.channel.tx_select()
        self.permits.probe = consumer.connection.channel()

    def _deactivate(self) -> None:
        if self.active:
            log.warning("frontier shard %d: no longer active; discarding what was not committed", self.shard)
        self._abandon_pass()
        self._inbox.clear()  # their connection is gone: the broker delivers them again
        self.robots_waiting.clear()
        self._committed_messages.clear()
        self.snapshots.reset()
        self.monitors.forget()

    def _activate(self) -> None:
        """Take the shard over: fence the previous owner, then catch up with what it committed."""
        self.changelog.open()
        applied = catch_up(self.changelog, self.state, self.seen)
        self.monitors.forget()
        self.active = True
        self.snapshots.mark_all(self.state.job_ids())
        log.info("frontier shard %d: active (caught up %d changelog records)", self.shard, applied)

    def _warm(self) -> None:
        """Read what the owner committed since we last looked (a standby, or before subscribing)."""
        if not self.active:
            try:
                catch_up(self.changelog, self.state, self.seen)
            except ChangelogUnavailable as error:  # an optimisation only: taking over catches up anyway
                log.warning("frontier shard %d: could not read the changelog ahead (%s)", self.shard, error)

    # handlers: a pass collects deliveries, the commit handles them

    def on_message(self, delivery: Delivery) -> None:
        """Keep the delivery for the pass; :meth:`_commit` handles and settles it."""
        delivery.defer()
        self._inbox.append(delivery)

    def _handle_inbox(self, consumer: ControlConsumer) -> list[Settle]:
        """Handle the pass's deliveries in order; how to settle each once the state is durable."""
        settles: list[Settle] = []
        for delivery in self._inbox:
            message_id = delivery.properties.message_id or hashlib.sha256(delivery.body).hexdigest()
            recorded = self.state.handled(message_id)
            if recorded is not None:
                # Handled and committed before a crash, its ack was not: publish what it published.
                self._outbox.extend(CrawlTask.model_validate_json(task) for task in recorded)
                self._pass_messages.append(message_id)
                settles.append((delivery, None))
                continue
            settles.append((delivery, self._handle_one(delivery, message_id)))
        return settles

    def _handle_one(self, delivery: Delivery, message_id: str) -> Exception | None:
        """Handle one message atomically: its state changes and tasks, or none of them."""
        db = self.state.db
        if not db.in_transaction:
            db.execute("BEGIN")
        outbox_mark, keys_before, known_mark = len(self._outbox), dict(self._pass_keys), len(self._pass_known)
        events_mark = self.monitors.events.mark()
        db.execute("SAVEPOINT message")
        try:
            with _message_context(delivery.message):
                self._handle(delivery.message)
        except Exception as error:  # rejected (dead letter) or a bug (retried): undo this message alone
            db.execute("ROLLBACK TO message")
            db.execute("RELEASE message")
            del self._outbox[outbox_mark:]
            del self._pass_known[known_mark:]
            self._pass_keys = keys_before
            self.monitors.events.undo_to(events_mark)
            self.state.restored()
            return error
        db.execute("RELEASE message")
        self.state.mark_handled(message_id, [task.model_dump_json() for task in self._outbox[outbox_mark:]])
        self._pass_messages.append(message_id)
        return None

    def _handle(self, message: object) -> None:
        self.handlers_[type(message)](message)

    def _job(self, message: JobSpec) -> None:
        self.state.save_job(message)
        self.admission.forget_job(message.job_id)
        self.snapshots.mark(message.job_id)
        self.monitor_room.job_saved(message)

    def _discovered_batch(self, message: DiscoveredBatch) -> None:
        batch = Batch(
            message.job_id,
            message.urls,
            message.depth,
            message.priority,
            message.seed,
            message.lastmods_ms,
        )
        self._discover(batch)

    def _discovered_url(self, message: DiscoveredUrl) -> None:
        self._discover(Batch(message.job_id, (message.url,), message.depth, message.priority, message.seed))

    def _discover(self, batch: Batch) -> None:
        job = self.state.job(batch.job_id)
        if job is None:
            raise MessageRejected(
                f"job {batch.job_id!r} is unknown to the frontier: submit jobs with `dualplane crawl`, "
                "which sends the job's rules before its seeds"
            )
        if self.state.cancelled(job.job_id):
            return  # links of its last pages, seeds still coming: the job admits nothing any more
        admitted = self.admission.consider(job, batch, self._pass_keys)
        self._pass_keys.update(admitted.keys)
        self._pass_known.extend(admitted.known)
        counts = admitted.counts
        for task in admitted.tasks:
            if job.monitor is not None:
                self.monitors.scheduled(job.monitor, task, admitted.lastmods_ms.get(task.url))
            if not self._admit(task):
                counts["backlog"] += 1
        if job.monitor is not None:
            for url in admitted.scheduled:
                if url in admitted.lastmods_ms:
                    self.monitors.lastmod(job.monitor, url, admitted.lastmods_ms[url])
        self.state.count(job.job_id, **counts)
        metrics.judged(counts)
        self.snapshots.mark(job.job_id)

    def _report(self, report: TaskReport) -> None:
        if report.outcome == permits.MISSING:
            self.permits.missing(report.domain)
        became_final = self.state.task_reported(report.task_id, report.job_id, report.domain, report.stage)
        if report.stage == "retrying":
            self._release_backlog(report.domain)  # its slot is free while it waits in a tier
        if became_final:
            self._release_backlog(report.domain)
            # Once per task, like its final state: a redelivered report does not count it again.
            self.state.count(report.job_id, links_over_limit=report.links_over_limit)
            self.monitors.reported(report)
        self.snapshots.mark(report.job_id)

    def _reports(self, message: TaskReports) -> None:
        for report in message.reports:
            self._report(report)

    # admission

    def _in_slots(self, domain: str) -> int:
        """The domain's tasks that hold its k x P_d slots: outstanding, but not those waiting out a
        retry delay in a tier (2 min after a captcha). Counted, eight blocked tasks of a domain
        throttled to P_d 1 left it nothing to fetch for two minutes while its site allowed 5/s."""
        outstanding, _, _ = self.state.domain(domain)
        return outstanding - self.state.retrying(domain)

    def _admit(self, task: CrawlTask) -> bool:
        """Issue ``task`` if its domain and the shard have room; else park it (False)."""
        self.slots.saw(task.domain, task.crawl_delay_ms)
        outstanding = self._in_slots(task.domain)
        limits = self.view.details(task.domain)
        full = self.state.total_outstanding() >= self.settings.frontier.max_outstanding
        held = limits.paused or self.state.paused(task.job_id)  # a paused job's tasks wait here
        if outstanding < self.slots_for(task.domain, limits) and not full and not held:
            self._issue(task)
            return True
        self.state.push_backlog(task.domain, task.job_id, task.model_dump_json())
        return False

    def _has_room(self, task: CrawlTask) -> bool:
        """Whether a monitor's due task may be issued now: its domain and the shard have room, neither
        the domain nor the job is paused (else it stays due: the schedule is its backlog)."""
        self.slots.saw(task.domain, task.crawl_delay_ms)
        outstanding = self._in_slots(task.domain)
        limits = self.view.details(task.domain)
        full = self.state.total_outstanding() >= self.settings.frontier.max_outstanding
        if limits.paused or full or outstanding >= self.slots_for(task.domain, limits):
            return False
        return not self.state.paused(task.job_id)  # stays due until the visit is resumed

    def _issue(self, task: CrawlTask) -> None:
        self.permits.ensure(task.domain)
        self.state.task_issued(task.task_id, task.job_id, task.domain)
        self._outbox.append(task)
        metrics.TASKS_ISSUED.inc()

    def _release_backlog(self, domain: str) -> None:
        limits = self.view.details(domain)
        if limits.paused:
            return  # released by the sweep once the pause is over
        outstanding = self._in_slots(domain)
        room = min(
            self.slots_for(domain, limits) - outstanding,
            self.settings.frontier.max_outstanding - self.state.total_outstanding(),
        )
        for row_id, task_json in list(self.state.backlog_for(domain, max(room, 0))):
            task = CrawlTask.model_validate_json(task_json)
            self._issue(task)
            self.state.drop_backlog(row_id)
            self.state.count(task.job_id, backlog=-1)
            self.snapshots.mark(task.job_id)

    # ticks and commits

    def _on_tick(self, consumer: ControlConsumer) -> None:
        run_due(self.sweeps_, "owner" if self.active else "standby", time.monotonic())

    def _standby_wake(self) -> None:
        """Published with the next commit, which an idle standby makes (see Wake)."""
        assert self.consumer_ is not None
        queue = self.topology.frontier_queue(self.shard)
        self.consumer_.publish("", queue, Wake(shard=self.shard), message_id=new_id())

    def _release_backlogs(self) -> None:
        for domain in self.state.backlog_domains():
            self._release_backlog(domain)

    def _forget_old_handled(self) -> None:
        self.state.forget_handled(self.state.handled_before(time.time() - HANDLED_KEPT_S))

    def _hold_job_snapshots(self) -> None:
        self._held_snapshots.extend(self.snapshots.due(self.state))

    def _commit(self, consumer: ControlConsumer) -> bool:
        """The pass: handle the inbox, make it durable (changelog, then SQLite), then settle it and
        publish its tasks in the consumer's transaction, which commits right after. False holds the
        commit: Kafka cannot take the changelog now, so nothing is acked and the pass is redone."""
        if not self.active and not self._inbox:
            return True
        self._inbox[:0] = self.robots_waiting.ready()
        if self._coalescing():
            return False  # nothing handled yet: the inbox waits for the next pass, unacked
        try:
            if not self.active:
                self._activate()
            # The previous pass's acks are committed (we would have reconnected otherwise).
            self.state.forget_handled(self._committed_messages)
            self._committed_messages = []
            settles = self._handle_inbox(consumer)
            # The schedule's new and gone events go with the changelog rows of the changes they announce.
            self._write_changelog([*self._held_snapshots, *self.monitors.events.drain()])
            self._held_snapshots.clear()
        except ChangelogUnavailable as unavailable:
            log.warning("frontier shard %d: %s; holding %d messages and retrying", self.shard, unavailable,
                        len(self._inbox))  # fmt: skip
            if not self._inbox:  # no delivery will come back to retry with: the jobs' progress would wait
                self.sweep("standby wake").ask(time.monotonic() + WAKE_RETRY_S)
            self._abandon_pass()
            return False
        for delivery, failure in settles:
            if isinstance(failure, RobotsPending):
                self.robots_waiting.hold(delivery, failure.origins)
            else:
                self._settle(consumer, delivery, failure)
        for task in self._outbox:
            consumer.publish(self.topology.tasks_exchange, task.priority, task)
        self._inbox, self._outbox = [], []
        self._last_pass_s = time.monotonic()
        self._committed_messages, self._pass_messages = self._pass_messages, []
        # Progress as of this pass is written with the next pass's changelog, once RabbitMQ has
        # this pass's tasks: a snapshot never counts as queued a task the lanes do not hold yet.
        run_due(self.sweeps_, "commit", time.monotonic())
        return True

    def _coalescing(self) -> bool:
        """Whether to let more messages join this pass: a few arrived, and the last pass was recent."""
        frontier = self.settings.frontier
        if len(self._inbox) >= frontier.pass_messages or not self._inbox:
            return False
        return time.monotonic() - self._last_pass_s < frontier.pass_interval_ms / 1000

    def _write_changelog(self, progress: list[SideRecord]) -> None:
        """Write the pass's changed rows and new seen keys to the changelog (with the jobs' progress
        snapshots that are due, in the same transaction), then locally."""
        records = self.state.changes()
        if not records and not self._pass_keys and not progress:
            return
        keys_by_bucket: dict[int, list[bytes]] = {}
        for key, bucket in self._pass_keys.items():
            keys_by_bucket.setdefault(bucket, []).append(key)
        offset = self.changelog.write([*records, *seen_records(keys_by_bucket)], also=progress)
        if progress:
            self.snapshots.published()
        self.seen.add_many(self._pass_keys)
        self.seen.flush()  # before the state: a crash between the two replays these keys again
        if offset >= 0:  # else only progress was written
            self.state.set_meta("changelog_offset", str(offset))
        self.state.commit()
        self._pass_keys = {}
        self.admission.remember(self._pass_known)
        self._pass_known = []

    def _abandon_pass(self) -> None:
        """Undo what the pass did locally; its deliveries stay unacked and are handled again."""
        self.active = False
        self.changelog.close()
        self.state.rollback()
        self._outbox.clear()
        self._held_snapshots.clear()  # the next owner (or this one, activated again) marks every job
        self.monitors.events.drain()  # their schedule changes were rolled back with the state
        self._pass_keys = {}
        self._pass_known = []
        self._pass_messages.clear()

    def _settle(self, consumer: ControlConsumer, delivery: Delivery, error: Exception | None) -> None:
        if error is None:
            delivery.ack()
            return
        with _message_context(delivery.message):
            if isinstance(error, MessageRejected):
                log.warning("frontier shard %d: dead-lettering a message: %s", self.shard, error.reason)
                delivery.dead_letter(error.reason)
            else:
                consumer.handler_failed(delivery, error)


def _woken(message: Wake) -> None:
    """Nothing to do: its delivery alone made this frontier take the shard over (see Wake)."""


def _message_context(message: object) -> AbstractContextManager[None]:
    """Log lines written about ``message`` carry its job, trace, domain and URL (those it has)."""
    return page_context(**page_of(message))
