"""The throttle processor's tables, agent, snapshot and lifecycle; see :mod:`data_plane.throttle.app`."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from faust.tables.wrappers import WindowWrapper

from dualplane.core.settings import Settings, ThrottleSettings
from dualplane.data_plane.throttle.buckets import BucketStore
from dualplane.data_plane.throttle.commands import ThrottleCommand
from dualplane.data_plane.throttle.credits import CreditBook, budget_pause, day_of
from dualplane.data_plane.throttle.events import FetchSample, parse_fetch_event
from dualplane.data_plane.throttle.exceptions import BadFetchEvent
from dualplane.data_plane.throttle.policy import Budget, DomainState, PolicyConfig, decide, domain_priority
from dualplane.data_plane.throttle.producer import ThrottleApp
from dualplane.data_plane.throttle.publisher import CommandPublisher
from dualplane.data_plane.throttle.quota import quota_pause
from dualplane.data_plane.throttle.rewind import rewind_uncommitted
from dualplane.data_plane.throttle.signals import WindowCounts
from dualplane.data_plane.throttle.snapshot import VERSION, write_snapshot
from dualplane.data_plane.throttle.windows import WindowRange, counts_of, span_s, summary, window_to_judge

log = logging.getLogger(__name__)


@dataclass
class Stats:
    events: int = 0
    bad_events: int = 0
    stale_events: int = 0
    errors: int = 0
    commands: int = 0


class ThrottleProcessor:
    """The agent, tables, timer and pages of the processor, bound to one Faust app."""

    def __init__(
        self,
        app: ThrottleApp,
        settings: Settings,
        config: ThrottleSettings,
        partitions: int,
        publisher: CommandPublisher,
    ) -> None:
        self.app = app
        self.settings = settings
        self.config = config
        self.policy = PolicyConfig.from_settings(config, settings.limits, settings.fetch)
        self.publisher = publisher
        self.rng = random.Random()
        self.stats = Stats()
        self.size_s, self.step_s = float(config.window_size_s), float(config.window_step_s)
        self.expires_s = self.size_s + self.step_s
        self.events_topic = app.topic(
            settings.topics.fetch_events, key_type=bytes, value_type=bytes,
            key_serializer="raw", value_serializer="raw",
        )  # fmt: skip
        self.state_topic = app.topic(
            settings.topics.throttle_state, key_type=bytes, value_type=bytes,
            key_serializer="raw", value_serializer="raw",
        )  # fmt: skip
        # One bucket a step; a judged window is the sum of its buckets (see data_plane.throttle.windows),
        # counted in memory and written per commit (data_plane.throttle.buckets).
        tumbling = app.Table(
            "buckets",
            default=dict,
            partitions=partitions,
            extra_topic_configs={"segment.ms": str(int(self.expires_s * 1000))},
        ).tumbling(self.step_s, expires=self.expires_s)
        self.buckets = BucketStore(cast(WindowWrapper, tumbling), self.size_s, self.step_s)
        # The fast layer's buckets (a second each): the window the policy judges step by step, while
        # the 10-minute one above is the slow layer (data_plane.throttle.policy).
        self.fast_size_s, self.fast_step_s = float(config.fast_window_s), float(config.fast_step_s)
        self.fast: BucketStore | None = None
        if config.fast_layer:
            fast_expires_s = self.fast_size_s + self.fast_step_s
            fast = app.Table(
                "fast_buckets",
                default=dict,
                partitions=partitions,
                extra_topic_configs={"segment.ms": str(int(max(fast_expires_s, 60.0) * 1000))},
            ).tumbling(self.fast_step_s, expires=fast_expires_s)
            self.fast = BucketStore(cast(WindowWrapper, fast), self.fast_size_s, self.fast_step_s)
        self.states = app.Table("states", default=dict, partitions=partitions)
        # Requests and credits per domain per UTC day, for the budgets; no table (no changelog) without one.
        budgeted = config.daily_budget or config.daily_credits
        self.daily = app.Table("daily", default=dict, partitions=partitions) if budgeted else None
        self.daily_used: dict[int, int] = {}  # UTC day -> requests counted by this worker
        self.credits = CreditBook(config.daily_credits)  # the scraping API's, per UTC day
        self.views: dict[str, dict[str, Any]] = {}  # domain -> last evaluation, for the snapshot
        self.ready = False  # tables recovered for the current assignment
        # partition -> offset of the last fetch.events value handled: how far this worker has read
        self.offsets: dict[int, int] = {}
        self.quota_paused_until_s = 0.0  # the scraping API's credits: every domain paused until then
        self.quota: dict[str, Any] = {}  # the last quota pause, for the snapshot (`status`)

    def install(self) -> None:
        """Register the agent, timer, pages and lifecycle hooks on the app."""
        app, processor = self.app, self

        async def throttle(stream: Any) -> None:
            async for event in stream.events():
                await processor.handle(event)

        async def all_domains(view: Any, request: Any) -> Any:
            return view.json(processor.snapshot())

        async def one_domain(view: Any, request: Any, domain: str) -> Any:
            return view.json(processor.domain_now(domain))

        async def start_publisher() -> None:
            processor.publisher.start()

        app.agent(self.events_topic, name="throttle")(throttle)
        app.task(start_publisher)
        app.timer(self.config.snapshot_interval_s, name="throttle-snapshot")(self.write_snapshot)
        app.timer(self.step_s, name="throttle-expiry")(self._expire)
        app.flush_hooks.append(self.buckets.write)  # counts reach the changelog before offsets commit
        if self.fast is not None:
            app.flush_hooks.append(self.fast.write)
        app.page("/throttle/")(all_domains)
        app.page("/throttle/{domain}/")(one_domain)
        # cast: mode's receiver type names its signal argument by a string mypy cannot resolve.
        app.on_rebalance_complete.connect(cast(Any, self._on_rebalance_complete))
        app.on_partitions_revoked.connect(cast(Any, self._on_partitions_revoked))
        app.on_before_shutdown.connect(cast(Any, self._on_shutdown))

    # the agent

    async def handle(self, event: Any) -> None:
        """Count one ``fetch.events`` value and act on its domain's window; never raises."""
        self.offsets[event.message.partition] = event.message.offset
        try:
            sample = parse_fetch_event(event.value)
        except BadFetchEvent as error:
            self.stats.bad_events += 1
            message = event.message
            log.warning("skipped %s[%s]@%s: %s", message.topic, message.partition, message.offset, error)
            return
        try:
            await self._handle(sample, event)
        except Exception:  # a bug must cost one event, not the worker
            self.stats.errors += 1
            log.exception("failed to process the fetch event of %s; skipped", sample.domain)

    async def _handle(self, sample: FetchSample, event: Any) -> None:
        self.stats.events += 1
        partition, offset = event.message.partition, event.message.offset
        self.buckets.add(sample, partition, offset)
        if self.fast is not None:
            self.fast.add(sample, partition, offset)
        used = self._count_daily(sample, partition, offset)
        if time.time() - sample.fetched_at_s > self.config.max_lag_s:
            self.stats.stale_events += 1
            return
        if sample.quota_exhausted:
            await self._pause_for_quota(sample)
            return
        day = day_of(sample.fetched_at_s)
        if self.credits.newly_spent(day):
            await self._pause_for_budget(day)
        await self._evaluate(sample.domain, sample.fetched_at_s, partition, offset, used)

    def _count_daily(self, sample: FetchSample, partition: int, offset: int) -> int:
        """Count the event's request and credits on its UTC day, once per offset; the day's requests."""
        day = day_of(sample.fetched_at_s)
        if self.daily is None:
            self.credits.add(day, sample.api_credits)  # shown by status; without a budget, not durable
            return 0
        value = self.daily.get(sample.domain) or {}
        if value.get("day") != day:
            value = {"day": day, "count": 0, "credits": 0.0}
        elif value.get("partition") == partition and value.get("offset", -1) >= offset:
            return self.daily_used.get(day, 0)  # redelivered after a crash: counted already
        self.daily[sample.domain] = {
            **value,
            "count": value["count"] + 1,
            "credits": float(value.get("credits", 0.0)) + sample.api_credits,
            "partition": partition,
            "offset": offset,
        }
        self.daily_used[day] = self.daily_used.get(day, 0) + 1
        self.credits.add(day, sample.api_credits)
        return self.daily_used[day]

    async def _evaluate(self, domain: str, now_s: float, partition: int, offset: int, used: int) -> None:
        record = self.states.get(domain) or {}
        if record.get("partition") == partition and record.get("offset", -1) >= offset:
            return  # redelivered after a crash: this event was judged before the state was saved
        state = DomainState.from_dict(record["state"]) if "state" in record else self.policy.initial_state()
        value, window, counts = self._judged(domain, now_s, state.last_change_s, self.fast or self.buckets)
        slow = None
        shown_value, shown_window = value, window
        if self.fast is not None:  # the slow layer: the 10-minute window since the last backoff
            shown_value, shown_window, slow = self._judged(domain, now_s, state.backoff_s, self.buckets)
        budget = self._budget(now_s, used)
        decision = decide(counts, state, self.policy, now_s=now_s, rng=self.rng, budget=budget,
                          priority=domain_priority(domain, self.config.low_priority), slow=slow)  # fmt: skip
        previous = self.views.get(domain, {}).get("window")
        self.views[domain] = {
            # Right after a change no window is judged yet (it must start after the change): keep
            # showing the one that led to it, rather than an empty window reading "0% blocked".
            "window": summary(shown_value, shown_window)
            if shown_window is not None or previous is None
            else previous,
            "window_fast": summary(value, window) if self.fast is not None and window is not None else None,
            "evaluated_at_s": now_s,
            "partition": partition,
        }
        command = None
        if decision.command is not None:
            new = decision.state
            command = ThrottleCommand.from_policy(
                domain, decision.command, counts, rate_rps=new.rate_rps, limit_rps=new.limit_rps
            )
        elif decision.state == state:
            return
        last_command = command.model_dump(mode="json") if command else record.get("last_command")
        self.states[domain] = {
            "state": decision.state.to_dict(),
            "last_command": last_command,
            "partition": partition,
            "offset": offset,
        }
        if command is not None:
            await self._issue(command)

    def _judged(
        self, domain: str, now_s: float, since_s: float | None, store: BucketStore
    ) -> tuple[dict[str, Any], WindowRange | None, WindowCounts]:
        """The window of ``store`` judged at ``now_s`` (the one starting after ``since_s``), its value
        and counts, its rates over the time the domain was crawled in it."""
        window = window_to_judge(now_s, store.size_s, store.step_s, since_s)
        if window is None:
            return {}, None, counts_of({})
        value = store.window_value(domain, window)
        span = span_s(window, now_s, store.step_s, value.get("first_s"), since_s)
        return value, window, counts_of(value, span, store.step_s)

    def _budget(self, now_s: float, used: int) -> Budget | None:
        """The budget rule's: the day's credits when a credit budget is set, else its requests."""
        if self.config.daily_credits:
            credits = self.credits.used.get(day_of(now_s), 0.0)
            return Budget(self.config.daily_credits, credits, unit="credit")
        return Budget(self.config.daily_budget, used) if self.config.daily_budget else None

    async def _pause_for_budget(self, day: int) -> None:
        """Pause every domain until the UTC day ends: its credit budget is spent. Once a day."""
        self.credits.paused_day = day
        used = self.credits.used.get(day, 0.0)
        command = budget_pause(day, used, self.config.daily_credits, self.settings.limits)
        self.quota_paused_until_s = command.issued_at.timestamp() + (command.ttl_s or 0)
        self.quota = {"paused_until_s": self.quota_paused_until_s, "reason": command.reason}
        await self._issue(command)

    async def _pause_for_quota(self, sample: FetchSample) -> None:
        """Pause every domain, once per pause: the fetches still in flight when it began say the same."""
        if sample.fetched_at_s < self.quota_paused_until_s:
            return
        command = quota_pause(sample, self.config.quota_pause_s, self.settings.limits)
        self.quota_paused_until_s = sample.fetched_at_s + self.config.quota_pause_s
        self.quota = {"paused_until_s": self.quota_paused_until_s, "reason": command.reason}
        await self._issue(command)

    async def _issue(self, command: ThrottleCommand) -> None:
        """Make ``command`` durable in Kafka (state topic and changelogs), then announce it.

        Kafka first: a command the fleet obeys is always in the compacted topic, and after a crash
        the replayed event finds its decision already saved instead of issuing it again.
        """
        self.stats.commands += 1
        log.info("%s: %s", command.domain, command.reason)
        await self.state_topic.send(key=command.state_key.encode(), value=command.to_avro())
        await self.app.producer.flush()
        self.publisher.submit(command)

    # what `dualplane throttle show` and the pages read

    def snapshot(self) -> dict[str, Any]:
        """Everything this worker knows, in the shape documented in :mod:`data_plane.throttle.snapshot`."""
        publisher = self.publisher.stats
        owned = self._owned_partitions()
        return {
            "version": VERSION,
            "generated_at": datetime.now(UTC).isoformat(),
            "app_id": self.settings.throttle_app_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "window": {"size_s": self.size_s, "step_s": self.step_s},
            "fast_window": {"size_s": self.fast_size_s, "step_s": self.fast_step_s} if self.fast else None,
            "policy": {
                "threshold": self.policy.threshold,
                "min_samples": self.policy.min_samples,
                "ceiling": self.policy.ceiling,
                "pause_ratio": self.policy.pause_ratio,
                "daily_budget": self.config.daily_budget,
                "daily_credits": self.config.daily_credits,
            },
            "ready": self.ready,
            "quota": self.quota or None,
            "credits": self.credits.view(time.time()),
            "partitions": owned,
            "offsets": {str(p): offset for p, offset in sorted(self.offsets.items()) if p in owned},
            "stats": {**vars(self.stats), "publisher": vars(publisher).copy()},
            "domains": {domain: self._domain_entry(domain) for domain in sorted(self._known_domains())},
        }

    def domain_now(self, domain: str) -> dict[str, Any]:
        """One domain's entry, with its window read from the table at the current wall-clock time."""
        entry = self._domain_entry(domain)
        window = window_to_judge(time.time(), self.size_s, self.step_s, entry["last_change_s"])
        entry["window_now"] = summary(self.buckets.window_value(domain, window), window) if window else None
        return {"domain": domain, "ready": self.ready, **entry}

    async def write_snapshot(self) -> None:
        path = self.settings.throttle_snapshot_path
        if path is None:
            return
        snapshot = self.snapshot()
        try:
            await asyncio.get_running_loop().run_in_executor(None, write_snapshot, path, snapshot)
        except OSError as error:
            log.warning("could not write the throttle snapshot %s: %s", path, error)

    def _domain_entry(self, domain: str) -> dict[str, Any]:
        record = self.states.get(domain) or {}
        state = DomainState.from_dict(record["state"]) if "state" in record else self.policy.initial_state()
        view = self.views.get(domain, {})
        return {
            "concurrency": state.concurrency,
            "delay_ms": state.delay_ms,
            "paused": state.paused,
            "healthy_windows": state.healthy_windows,
            "extreme_windows": state.extreme_windows,
            "last_change_s": state.last_change_s,
            "rate_rps": state.rate_rps,  # None: unthrottled
            "limit_rps": state.limit_rps,  # the lowest rate refused since the last backoff
            "hot": state.hot,  # the 10-minute window since the last backoff is over the threshold
            "latency_ms_baseline": state.latency_ms,
            "window": view.get("window"),
            "window_fast": view.get("window_fast"),
            "evaluated_at_s": view.get("evaluated_at_s"),
            "last_command": record.get("last_command"),
        }

    def _known_domains(self) -> set[str]:
        return set(self.views) | {str(key) for key in self.states}

    def _owned_partitions(self) -> list[int]:
        try:
            assignment = self.app.consumer.assignment()
        except Exception:  # not started or mid-rebalance: report nothing rather than fail the page
            return []
        return sorted(tp.partition for tp in assignment if tp.topic == self.settings.topics.fetch_events)

    # lifecycle

    async def _on_partitions_revoked(self, sender: Any, *args: Any, **kwargs: Any) -> None:
        self.ready = False
        self.buckets.write()  # the commit that comes with the revocation flushes them

    async def _on_rebalance_complete(self, sender: Any, *args: Any, **kwargs: Any) -> None:
        await rewind_uncommitted(
            self.app.consumer, self.settings.topics.fetch_events, self.config.offset_reset
        )
        self.ready = True
        owned = set(self._owned_partitions())
        self.views = {d: v for d, v in self.views.items() if v.get("partition") in owned}
        self._drop_expired_windows()
        self._recount_daily()

    def _drop_expired_windows(self) -> None:
        """Buckets recovered from the changelog are never expired by Faust: drop the old ones here."""
        dropped = self.buckets.drop_expired(time.time(), self.expires_s)
        if self.fast is not None:
            dropped += self.fast.drop_expired(time.time(), self.fast_size_s + self.fast_step_s)
        if dropped:
            log.info("dropped %d expired buckets recovered from the changelog", dropped)

    async def _expire(self) -> None:
        self.buckets.drop_expired(time.time(), self.expires_s)
        if self.fast is not None:
            self.fast.drop_expired(time.time(), self.fast_size_s + self.fast_step_s)

    def _recount_daily(self) -> None:
        if self.daily is None:
            return
        totals: dict[int, int] = {}
        credits: dict[int, float] = {}
        for value in self.daily.values():
            if isinstance(value, dict) and "day" in value:
                day = value["day"]
                totals[day] = totals.get(day, 0) + int(value.get("count", 0))
                credits[day] = credits.get(day, 0.0) + float(value.get("credits", 0.0))
        self.daily_used = totals
        self.credits.used = credits

    async def _on_shutdown(self, sender: Any, *args: Any, **kwargs: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.publisher.close)
