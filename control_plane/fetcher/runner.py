"""The fetch side of the control contract: which task runs when, how hard a domain is pushed.

A :class:`TaskRunner` consumes the priority lanes (pika, on its connection thread) and runs an
async ``FetchWork`` coroutine per task on its own asyncio event loop thread, so hundreds of
requests can be in flight on one thread. What it guarantees, whatever the work does:

- **Capacity.** At most S_global (``DUALPLANE_LIMIT_FETCH_CONCURRENCY``) tasks run at once; each
  lane may prefetch twice that many, so one lane alone can use the whole capacity (work-conserving: the
  normal lane alone used to be capped at its 30% share, 4 of 16 requests in flight). When several
  lanes have work, tasks start by weight: a lane below its share (high 50%, normal 30%, bulk 20%)
  goes first, higher lanes before lower, so a flood of bulk work never starves high-priority tasks.
- **Per-domain concurrency across the fleet.** A task runs only while it holds one of its
  domain's P_d permits (:mod:`brokers.amqp.permits`). With no free permit the task waits up to
  ``DUALPLANE_FETCH_PERMIT_WAIT_S`` locally, then goes back through the shortest delay tier
  (a deferral, not an attempt).
- **Throttle commands, obeyed at once.** The runner holds a
  :class:`~core.limits.LimitsSource` (the throttle's view, wired in by the services
  registry), started with it (so a fetcher restarted during a throttle starts throttled) and kept
  current by the throttle. Per domain (:mod:`control_plane.fetcher.politeness`): no more than
  the current concurrency in flight in this process, before the frontier has resized the permits;
  a paused domain's tasks are deferred like those without a permit; after a 429/403/challenge
  the domain is left alone for Retry-After (or a cooldown) and its permit is held that long.
- **Politeness.** A permit is kept for the domain delay (the largest of the throttle's delay,
  robots.txt's Crawl-delay and ``DUALPLANE_LIMIT_DOMAIN_DELAY_MS``, read when the request ends, so
  a new command applies to the very next request) times a random 1 to
  1 + ``DUALPLANE_FETCH_DELAY_JITTER`` factor, so requests to a domain are never strictly periodic,
  counted from the request's start (start to start: a commanded rate is the rate sent, whatever the
  request and the fleet's own work cost), and at least until the request ended.
- **Retries.** Each result goes through :func:`control_plane.fetcher.retry_policy.decide`: retried via a
  delay tier with the attempt recorded in the task's history, given up, or dead-lettered with the
  whole history once attempts run out.
- **Redirects.** A result with ``redirect_to`` (a 3xx the fetcher did not follow) sends the target
  to the frontier as a discovered URL, so it is scoped, deduplicated and fetched once per job
  like any link, and each hop passes the SSRF guard on its own.
- **Links.** A fetched page's links (``FetchResult.links``, parsed by the fetcher) go to the frontier
  one level deeper, one :class:`~brokers.amqp.messages.DiscoveredBatch` per frontier shard, in the
  transaction that acks the task: the crawl moves at fetch speed, never waiting for extraction.
  Links the per-page cap left out are reported with the task (``links_over_limit``).
- **Cancelled jobs.** A task whose job was cancelled (``dualplane job cancel``; the runner holds a
  :class:`~core.jobs.CancelledJobs`, and hears cancels broadcast by ``job cancel --wait``) is acked
  unfetched: its frontier has already ended it. That is checked when the task arrives, again before
  it starts (tasks waiting for a permit are dropped at once when a cancel is heard), and once more on
  the event loop just before the request; a broadcast cancel is answered once no fetch of the job
  runs here (:mod:`control_plane.fetcher.cancelling`), so after ``job cancel --wait`` none starts.
- **Paused jobs.** A task whose job is paused (``dualplane job pause``: the same view, and pauses
  broadcast by ``job pause --wait``) goes round the shortest delay tier unfetched, not counted as
  an attempt, when it arrives or while it waits for a permit; it comes back until the job is
  resumed. Nothing of the job is lost, and a broadcast pause is answered as a cancel is.
- **No loss.** The task is acked only after ``work`` returned (the fetcher returns once Kafka
  confirmed its outputs) and the retry or dead letter, if any, was confirmed by RabbitMQ; the
  page's links and redirect target are published in the same AMQP transaction as the ack.
  Reports to the frontier are published with the ack, in the same AMQP transaction (one
  message per frontier shard and pass, :class:`~brokers.amqp.messages.TaskReports`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp import fetch_control, permits, retry_relay
from dualplane.brokers.amqp.consumer import ControlConsumer, Delivery, QueueBinding
from dualplane.brokers.amqp.dead_letters import dead_letter
from dualplane.brokers.amqp.discovery import discovery_batches
from dualplane.brokers.amqp.messages import (
    MAX_BATCH_REPORTS,
    PRIORITIES,
    CrawlTask,
    JobCancel,
    JobPause,
    Priority,
    ReportStage,
    TaskReport,
    TaskReports,
    Validators,
    new_id,
)
from dualplane.brokers.amqp.publisher import enqueued_at
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.fetcher import metrics, politeness
from dualplane.control_plane.fetcher.cancelling import FetcherCancels, Reply
from dualplane.control_plane.fetcher.retry_policy import DelayTiers, Outcome, RetryDecision, decide
from dualplane.core import metrics as core_metrics
from dualplane.core.jobs import CancelledJobs, NoCancels
from dualplane.core.limits import Limits, LimitsSource
from dualplane.core.logs import bind_page, page_context
from dualplane.core.settings import Settings
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of

log = logging.getLogger(__name__)

LANE_WEIGHTS: dict[Priority, float] = {"high": 0.5, "normal": 0.3, "bulk": 0.2}
# Acks, reports, retries and deferrals go to RabbitMQ in one transaction at most this often: tasks end
# one by one, and a commit (a round trip, and RabbitMQ's work) per task was most of the fetcher's
# AMQP traffic. Each is settled only after Kafka has its outputs, whenever the commit comes.
COMMIT_INTERVAL_S = 0.05


class HandOffFailed(Exception):
    """Raised by ``FetchWork`` when the next stage did not confirm its outputs: deferred, no attempt."""


@dataclass(frozen=True)
class FetchResult:
    """What one attempt at a task produced, as the retry policy needs it."""

    outcome: Outcome
    status: int | None = None
    detail: str = ""
    retry_after_s: float | None = None
    # A redirect's target, handed to the frontier as a discovered URL (so it is deduplicated).
    redirect_to: str | None = None
    # A fetched page's links to follow (document order, capped), and how many the cap left out.
    links: tuple[str, ...] = ()
    links_over_limit: int = 0
    final_url: str | None = None  # where the links were found (the task's URL unless redirects were followed)
    # What a monitor keeps for the next visit: the response's validators, else a text fingerprint.
    validators: Validators | None = None
    fingerprint: str | None = None
    # When the request went out (time.monotonic()): the domain's delay counts from here, start to
    # start. None: from when the runner handed the task to the work.
    sent_s: float | None = None


FetchWork = Callable[[CrawlTask], Awaitable[FetchResult]]
"""One attempt at a task, on the runner's event loop; returns only once its outputs are safely
handed on (the fetcher: once Kafka confirmed the page and the event)."""


@dataclass
class _Waiting:
    delivery: Delivery
    deadline: float


class TaskRunner:
    """Runs crawl tasks from the lanes through ``work`` under the fleet's politeness rules."""

    def __init__(
        self,
        settings: Settings,
        work: FetchWork,
        view: LimitsSource,
        *,
        cancels: CancelledJobs | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.work = work
        self.view = view
        self.cancels = cancels or NoCancels()
        self.fetcher_id = new_id()  # names this fetcher in its answers to broadcast cancels
        self.stopping = FetcherCancels(self.cancels)
        self.gate = politeness.DomainGate()
        self.topology = Topology(settings.queues)
        self.tiers = DelayTiers(settings.queues.tiers())
        self.rng = rng or random.Random()
        self.capacity = settings.limits.fetch_concurrency
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="fetch-loop", daemon=True)
        self._loop_thread.start()
        self.permit_channel: BlockingChannel | None = None
        self.permit_queues = permits.PermitQueues(self.topology)
        self.waiting: list[_Waiting] = []
        self.in_flight = 0
        self.lane_shares = lane_shares(self.capacity)
        self.lane_in_flight: dict[Priority, int] = dict.fromkeys(PRIORITIES, 0)
        self.consumer_: ControlConsumer | None = None
        self._reports: dict[str, list[TaskReport]] = {}  # frontier shard -> reports of this pass

    def consumer(self) -> ControlConsumer:
        """The lanes' consumer; starts the throttle view first (blocks until its state is read)."""
        self.view.start()
        self.cancels.start()
        # Twice the capacity: a finished task's ack waits for the next commit (COMMIT_INTERVAL_S) and
        # counts against the prefetch until then, which must not starve the lanes of the next tasks.
        lane = QueueBinding(self.on_task, (CrawlTask,), prefetch=2 * self.capacity)
        bindings = {self.topology.lane_queue(priority): lane for priority in PRIORITIES}
        self.consumer_ = ControlConsumer(
            self.settings,
            bindings,
            prefetch=self.capacity,
            on_connected=self._on_connected,
            on_tick=self._on_tick,
            name="fetcher",
            transactional=True,
            before_commit=self._send_reports,
            commit_interval_s=COMMIT_INTERVAL_S,
            drained=self._drained,
            drain_timeout_s=self.settings.fetch.drain_timeout_s,
        )
        return self.consumer_

    def close(self) -> None:
        """Stop the event loop and the view; call after the consumer stopped (unacked tasks are requeued)."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._loop_thread.join(timeout=10)
        self.view.close()
        self.cancels.close()

    # connection thread

    def on_task(self, delivery: Delivery) -> None:
        delivery.defer()
        metrics.received(delivery.message.priority, enqueued_at(delivery.properties))
        if self.stopping.cancelled(delivery.message.job_id):
            self._drop_cancelled(delivery)
            return
        if self.stopping.paused(delivery.message.job_id):
            self._defer(delivery, counted_as="paused")  # back to its lane after a tier: kept, not run
            return
        self.waiting.append(_Waiting(delivery, time.monotonic() + self._permit_wait_s(delivery.message)))
        self._start_waiting()

    def _permit_wait_s(self, task: CrawlTask) -> float:
        """Long enough for the domain's tasks already waiting here to have their turn."""
        limits = self.view.details(task.domain)
        delay_ms = politeness.delay_ms(
            limits.delay_ms, task.crawl_delay_ms, self.settings.limits.domain_delay_ms
        )
        queued = sum(1 for waiting in self.waiting if waiting.delivery.message.domain == task.domain)
        fetch = self.settings.fetch
        return politeness.permit_wait_s(
            fetch.permit_wait_s, delay_ms, limits.concurrency, queued, fetch.delay_jitter
        )

    def _on_connected(self, consumer: ControlConsumer) -> None:
        assert consumer.connection is not None
        self.waiting.clear()  # their deliveries belonged to the previous connection
        self._reports.clear()  # and so did these: their tasks' acks were never committed
        # Tasks still running belong to it too: their results are dropped (the broker requeued them),
        # so they no longer count against the capacity.
        self.in_flight = 0
        self.lane_in_flight = dict.fromkeys(PRIORITIES, 0)
        self.gate.reset()  # and the permits held on it went back with it
        self.permit_channel = consumer.connection.channel()
        self.permit_queues.reset(consumer.connection.channel())
        self.stopping.reset()
        # Before the lanes are consumed: a fetcher taking tasks always hears broadcast cancels.
        fetch_control.listen(self.permit_channel, self.topology, self._on_control)

    def _on_control(self, control: JobCancel | JobPause, reply_to: str, correlation_id: str) -> None:
        if isinstance(control, JobPause):
            self._on_pause(control, (reply_to, correlation_id))
        else:
            self._on_cancel(control, reply_to, correlation_id)

    def _on_pause(self, pause: JobPause, reply: Reply) -> None:
        """A pause broadcast by ``job pause --wait`` (or a resume): the job's tasks waiting here go
        back unfetched, and the pause is answered once none of its fetches runs here."""
        replies = self.stopping.heard_pause(pause.job_id, pause.paused, reply)
        self._defer_paused()
        self._answer(pause.job_id, replies)

    def _defer_paused(self) -> None:
        """Send the waiting tasks of paused jobs round the shortest delay tier (not an attempt)."""
        keep = []
        for waiting in self.waiting:
            if self.stopping.paused(waiting.delivery.message.job_id):
                self._defer(waiting.delivery, counted_as="paused")
            else:
                keep.append(waiting)
        self.waiting = keep

    def _on_cancel(self, cancel: JobCancel, reply_to: str, correlation_id: str) -> None:
        """A cancel broadcast by ``job cancel --wait``: drop the job's tasks waiting here, and answer
        once none of its fetches runs here."""
        job_id = cancel.job_id
        dropped = self._drop_waiting(lambda job: job == job_id)
        if dropped:
            log.info("job %s cancelled: dropped %d task(s) waiting for a permit", job_id, dropped)
        self._answer(job_id, self.stopping.heard_cancel(job_id, (reply_to, correlation_id)))

    def _drop_waiting(self, cancelled: Callable[[str], bool]) -> int:
        """Drop the waiting tasks whose job is ``cancelled``; how many."""
        keep = [w for w in self.waiting if not cancelled(w.delivery.message.job_id)]
        for waiting in self.waiting:
            if cancelled(waiting.delivery.message.job_id):
                self._drop_cancelled(waiting.delivery)
        dropped, self.waiting = len(self.waiting) - len(keep), keep
        return dropped

    def _answer(self, job_id: str, replies: list[Reply]) -> None:
        channel = self.permit_channel
        for reply_to, correlation_id in replies:
            if channel is not None and channel.is_open:
                fetch_control.answer(channel, reply_to, correlation_id, self.fetcher_id, job_id)

    def _drop_cancelled(self, delivery: Delivery) -> None:
        delivery.ack()  # its frontier ended the task with the job: nothing to fetch or report
        metrics.RESULTS["cancelled"].inc()

    def _on_tick(self, consumer: ControlConsumer) -> None:
        self._start_waiting()

    def _drained(self, consumer: ControlConsumer) -> bool:
        """Graceful stop: tasks still waiting for a permit go back to their lane at once; True once
        no task runs (each running one is settled when Kafka has its page, as always)."""
        for waiting in self.waiting:
            waiting.delivery.requeue()
        self.waiting.clear()
        return self.in_flight == 0

    def _start_waiting(self) -> None:
        self._drop_waiting(self.stopping.cancelled)  # cancelled while they waited
        self._defer_paused()  # or paused
        still_waiting = []
        now = time.monotonic()
        exhausted: set[str] = set()  # domains with no free permit this pass: ask the broker once
        limits: dict[str, Limits] = {}  # one look at the view per domain and pass
        for waiting in sorted(self.waiting, key=self._start_order):
            task: CrawlTask = waiting.delivery.message
            if self.in_flight >= self.capacity:
                waiting.deadline = max(waiting.deadline, now + self.settings.fetch.permit_wait_s)
                still_waiting.append(waiting)  # waiting for capacity, not for a permit: no deferral
                continue
            domain = task.domain
            if domain not in limits:
                limits[domain] = self.view.details(domain)
            verdict = self.gate.check(domain, limits[domain].concurrency, limits[domain].paused)
            if verdict == "defer":
                with page_context(trace_id=task.trace_id, job_id=task.job_id, domain=domain, url=task.url):
                    log.debug("%s is paused (%s); deferring %s", domain, limits[domain].reason, task.url)
                self._defer(waiting.delivery)
                continue
            cooling_s = self.gate.cooling_s(domain)
            if cooling_s > 0:  # the domain cools down after pushback: its tasks wait it out here
                waiting.deadline = max(waiting.deadline, now + politeness.cooling_wait_s(cooling_s))
            permit = None
            if verdict == "go" and domain not in exhausted:
                problem = self._unrunnable(task)
                if problem is not None:
                    self._reject(waiting.delivery, problem)
                    continue
                if not self.permit_queues.exists(domain):
                    self._permit_queue_missing(waiting.delivery)
                    continue
                permit = self._try_permit(domain)
            if permit is None:
                exhausted.add(domain)
            if permit is not None:
                self._start(waiting.delivery, permit)
            elif now >= waiting.deadline:
                self._defer(waiting.delivery)
            else:
                still_waiting.append(waiting)
        self.waiting = still_waiting

    def _start_order(self, waiting: _Waiting) -> tuple[bool, int]:
        """Lanes below their share of the capacity first, then higher lanes before lower ones."""
        lane: Priority = waiting.delivery.message.priority
        return self.lane_in_flight[lane] >= self.lane_shares[lane], PRIORITIES.index(lane)

    def _unrunnable(self, task: CrawlTask) -> str | None:
        """Why ``task`` can never run (a poison task, not made by the frontier), or None."""
        try:
            host = domain_of(task.url)
        except InvalidUrl as error:
            return f"the task's URL cannot be fetched: {error}"
        if host != task.domain:
            # Its permits would be another site's: politeness would be kept for the wrong site.
            return f"the task's domain {task.domain!r} is not its URL's ({host!r})"
        return None

    def _permit_queue_missing(self, delivery: Delivery) -> None:
        """The task's permit queue is gone (deleted, or the broker's state lost): a retry, whose
        report makes the frontier declare and fill it again. A task no frontier issued finds none on
        any attempt and is dead-lettered, with this reason, once its attempts are spent."""
        task: CrawlTask = delivery.message
        queue = self.topology.permits_queue(task.domain)
        result = FetchResult(
            Outcome.PERMIT_QUEUE_MISSING,
            detail=f"no permit queue {queue!r}: the frontier that issued the task makes it again; a task "
            "not submitted through the frontier never gets one",
        )
        attempts = {"attempt": task.attempt, "max_attempts": task.max_attempts}
        decision = decide(result.outcome, **attempts, tiers=self.tiers, rng=self.rng)
        log.warning("%s: %s", task.url, result.detail)
        self._settle(delivery, task, result, decision)

    def _reject(self, delivery: Delivery, reason: str) -> None:
        """Dead-letter a task that can never run, with ``reason``, and tell its frontier."""
        task: CrawlTask = delivery.message
        log.warning("%s: dead-lettering the task: %s", task.url, reason)
        dead_letter(
            self._channel(),
            self.topology,
            delivery.body,
            delivery.properties,
            reason=reason,
            source_queue=delivery.queue,
            exchange=self.topology.tasks_exchange,
            routing_key=task.priority,
        )
        self._report(delivery, task, "dead_lettered", None, reason)
        delivery.ack()

    def _try_permit(self, domain: str) -> permits.Permit | None:
        assert self.permit_channel is not None
        return permits.try_acquire(self.permit_channel, self.topology, domain)

    def _start(self, delivery: Delivery, permit: permits.Permit) -> None:
        task: CrawlTask = delivery.message
        self._report(delivery, task, "started")
        self.in_flight += 1
        self.lane_in_flight[task.priority] += 1
        self.gate.acquired(task.domain)
        self.stopping.started(task.job_id)
        asyncio.run_coroutine_threadsafe(self._run(delivery, permit), self.loop)

    def _defer(self, delivery: Delivery, counted_as: str = "deferred") -> None:
        """No permit came free in time, or the domain is paused: send the task round the shortest
        delay tier, unchanged (its attempt is not counted)."""
        task: CrawlTask = delivery.message
        self._to_tier(self.tiers.names[0], task)
        delivery.ack()
        metrics.RESULTS[counted_as].inc()

    def _to_tier(self, tier: str, task: CrawlTask) -> None:
        """Send ``task`` round delay tier ``tier``, due back in its lane after the tier's delay (the
        retry relay hands it on then: ``brokers.amqp.retry_relay``)."""
        headers = retry_relay.due_headers(self.tiers.ttl_ms(tier))
        self._consumer().publish(self.topology.tier_name(tier), task.priority, task, headers=headers)

    def _finish(self, delivery: Delivery, permit: permits.Permit, result: FetchResult, sent_s: float) -> None:
        task: CrawlTask = delivery.message
        with page_context(trace_id=task.trace_id, job_id=task.job_id, domain=task.domain, url=task.url):
            self._finish_task(delivery, permit, result, sent_s)

    def _finish_task(
        self, delivery: Delivery, permit: permits.Permit, result: FetchResult, sent_s: float
    ) -> None:
        self._ended(delivery)
        task: CrawlTask = delivery.message
        decision = decide(
            result.outcome,
            attempt=task.attempt,
            max_attempts=task.max_attempts,
            retry_after_s=result.retry_after_s,
            tiers=self.tiers,
            rng=self.rng,
        )
        self._settle(delivery, task, result, decision)
        cooldown_s = 0.0
        if decision.cool_down_domain:
            throttle = self.settings.throttle
            cooldown_s = politeness.cooldown_s(
                result.retry_after_s,
                throttle.cooldown_without_retry_after_ms(result.outcome),
                throttle.cooldown_cap_ms,
            )
            self.gate.cool(task.domain, cooldown_s)
            log.info("%s answered %s: leaving it alone for %.1f s", task.domain, result.outcome, cooldown_s)
        self._hold_then_release(permit, task, sent_s, at_least_s=cooldown_s)

    def _settle(
        self, delivery: Delivery, task: CrawlTask, result: FetchResult, decision: RetryDecision
    ) -> None:
        detail = f"HTTP {result.status}: {result.detail}" if result.status else result.detail
        channel = self._channel()
        if decision.action == "defer" and decision.tier is not None:
            # The backend's failure, not the task's: unchanged, no attempt spent, never a dead letter.
            log.warning("%s: %s", task.url, decision.reason)
            self._to_tier(decision.tier, task)
            delivery.ack()
            metrics.RESULTS[decision.action].inc()
            return
        if decision.action == "retry" and decision.tier is not None:
            not_before = datetime.now(UTC) + timedelta(seconds=decision.delay_s)
            retry = task.next_attempt(result.outcome, detail, not_before)
            self._to_tier(decision.tier, retry)
            self._report(delivery, task, "retrying", result, decision.reason)
        elif decision.action == "dead_letter":
            final = task.next_attempt(result.outcome, detail, None)
            dead_letter(
                channel,
                self.topology,
                final.encode(),
                delivery.properties,
                reason=decision.reason,
                source_queue=delivery.queue,
                exchange=self.topology.tasks_exchange,
                routing_key=task.priority,
            )
            self._report(delivery, task, "dead_lettered", result, decision.reason)
        else:
            if result.redirect_to:
                self._discovered(task, [result.redirect_to], depth=task.depth)
            if result.links:
                self._discovered(task, result.links, depth=task.depth + 1, source_url=result.final_url)
            stage: ReportStage = "done" if decision.action == "done" else "failed"
            self._report(delivery, task, stage, result, decision.reason)
        delivery.ack()
        metrics.RESULTS[decision.action].inc()
        if decision.action == "dead_letter":
            core_metrics.DEAD_LETTERS.labels("fetcher", str(result.outcome)).inc()

    def _requeue(self, delivery: Delivery, permit: permits.Permit, sent_s: float) -> None:
        """The next stage did not take the outputs: the task goes round the shortest delay tier.

        Not ``basic_nack(requeue=True)``: the quorum queue counts that as a delivery, so an S3 or
        Kafka outage longer than ``DUALPLANE_QUEUE_DELIVERY_LIMIT`` hand-offs would dead-letter
        good tasks; and a requeued task comes straight back, refetching the page in a tight loop.
        """
        self._defer(delivery, counted_as="requeued")
        self._ended(delivery)
        self._hold_then_release(permit, delivery.message, sent_s)

    def _ended(self, delivery: Delivery) -> None:
        """A task started here is no longer running (settled by the caller)."""
        task: CrawlTask = delivery.message
        self.in_flight -= 1
        self.lane_in_flight[task.priority] -= 1
        self._answer(task.job_id, self.stopping.ended(task.job_id))

    def _cancelled_before_request(self, delivery: Delivery, permit: permits.Permit) -> None:
        """Its job was cancelled between the start and the request: dropped, its permit released."""
        self._drop_cancelled(delivery)
        self._ended(delivery)
        self._hold_then_release(permit, delivery.message, time.monotonic())  # nothing was sent

    def _hold_then_release(
        self, permit: permits.Permit, task: CrawlTask, sent_s: float, *, at_least_s: float = 0.0
    ) -> None:
        """Give the permit back the domain's delay after ``sent_s`` (start to start), and not before
        ``at_least_s`` (a cooldown) from now."""
        throttled = self.view.details(task.domain)
        delay_ms = politeness.delay_ms(
            throttled.delay_ms, task.crawl_delay_ms, self.settings.limits.domain_delay_ms
        )
        hold_s = politeness.hold_s(delay_ms, self.settings.fetch.delay_jitter, self.rng)
        release_in_s = politeness.release_in_s(sent_s, time.monotonic(), hold_s, at_least_s)
        consumer, channel = self.consumer_, self.permit_channel
        assert consumer is not None and consumer.connection is not None and channel is not None
        generation = consumer.generation

        def release() -> None:
            if generation == consumer.generation:  # else the gate was reset with the connection
                self.gate.released(task.domain)
            if channel.is_open:  # else the broker already returned the permit with the channel
                permits.release(channel, permit)

        consumer.connection.call_later(release_in_s, release)

    def _report(
        self,
        delivery: Delivery,
        task: CrawlTask,
        stage: ReportStage,
        result: FetchResult | None = None,
        detail: str = "",
    ) -> None:
        report = TaskReport(
            task_id=task.task_id,
            job_id=task.job_id,
            trace_id=task.trace_id,
            url=task.url,
            domain=task.domain,
            stage=stage,
            outcome=str(result.outcome) if result else "",
            attempt=task.attempt,
            detail=detail,
            links_over_limit=result.links_over_limit if result and stage == "done" else 0,
            **_kept(result if stage == "done" else None),
        )
        self._reports.setdefault(self.topology.route(task.domain), []).append(report)

    def _send_reports(self, consumer: ControlConsumer) -> bool:
        """Before each commit: the pass's reports, one message per frontier shard, in the transaction
        that also acks their tasks (so a report is sent exactly when its task's ack is)."""
        for route, reports in self._reports.items():
            for first in range(0, len(reports), MAX_BATCH_REPORTS):
                batch = TaskReports(reports=tuple(reports[first : first + MAX_BATCH_REPORTS]))
                consumer.publish(self.topology.reports_exchange, route, batch, message_id=new_id())
        self._reports.clear()
        return True

    def _channel(self) -> BlockingChannel:
        assert self.consumer_ is not None and self.consumer_.channel is not None
        return self.consumer_.channel

    def _discovered(
        self, task: CrawlTask, urls: Sequence[str], *, depth: int, source_url: str | None = None
    ) -> None:
        """Hand a page's links (or a redirect's target) to their frontier shards, to be scoped and
        deduplicated there; sent with the task's ack, in the same transaction."""
        found = discovery_batches(
            self.topology,
            task.job_id,
            urls,
            depth=depth,
            source_url=source_url or task.url,
            trace_id=task.trace_id,
        )
        for routing_key, batch in found:
            self._consumer().publish(
                self.topology.discovery_exchange, routing_key, batch, message_id=new_id()
            )
            metrics.LINKS.inc(len(batch.urls))

    def _consumer(self) -> ControlConsumer:
        assert self.consumer_ is not None
        return self.consumer_

    # the event loop

    async def _run(self, delivery: Delivery, permit: permits.Permit) -> None:
        task: CrawlTask = delivery.message
        assert self.consumer_ is not None
        bind_page(trace_id=task.trace_id, job_id=task.job_id, domain=task.domain, url=task.url)
        if self.stopping.cancelled(task.job_id):  # the last look before the request is sent
            drop = lambda: self._cancelled_before_request(delivery, permit)  # noqa: E731
            self.consumer_.call_threadsafe(delivery.generation, drop)
            return
        handed_s = time.monotonic()  # the delay's start when the work does not say when it sent
        try:
            result = await self.work(task)
        except HandOffFailed as error:
            # The next stage (Kafka) did not take the outputs: not the site's fault, so no attempt
            # is counted. Requeue the task; the permit is held for the delay from now (as before a
            # request: when it went out is not known here).
            log.warning("%s: %s; the task goes round the shortest delay tier", task.url, error)
            requeue = lambda: self._requeue(delivery, permit, time.monotonic())  # noqa: E731
            self.consumer_.call_threadsafe(delivery.generation, requeue)
            return
        except Exception as error:  # a bug in the work must not lose the task: retry it
            log.exception("fetch work raised on %s", task.url)
            result = FetchResult(
                Outcome.CONNECTION_ERROR, detail=f"fetch raised {type(error).__name__}: {error}"
            )
        assert self.consumer_ is not None
        sent_s = result.sent_s if result.sent_s is not None else handed_s
        finish = lambda: self._finish(delivery, permit, result, sent_s)  # noqa: E731
        self.consumer_.call_threadsafe(delivery.generation, finish)


def lane_shares(capacity: int) -> dict[Priority, int]:
    """Split S_global across the lanes by weight, at least one each, summing to ``capacity``."""
    shares = {lane: max(1, int(capacity * LANE_WEIGHTS[lane])) for lane in PRIORITIES}
    shares["high"] += max(0, capacity - sum(shares.values()))
    return shares


def _kept(result: FetchResult | None) -> dict[str, str | None]:
    """The report fields a monitor keeps of a done page (all None for anything else)."""
    if result is None:
        return {}
    validators = result.validators
    return {
        "etag": validators.etag if validators else None,
        "last_modified": validators.last_modified if validators else None,
        "fingerprint": result.fingerprint,
    }
