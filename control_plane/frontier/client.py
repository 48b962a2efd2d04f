"""The job client: what the CLI, the demo, tests and benchmarks call to submit, follow, pause and cancel jobs.

Connect, open a confirmed channel, declare the topology, submit, close; then read the job's progress
and ask :class:`~control_plane.frontier.jobs.FinishRule` after each look. None of the callers wires
those steps by hand, and none decides for itself when a job is finished or stalled.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import pika.exceptions
from confluent_kafka import KafkaException
from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers import amqp
from dualplane.brokers.amqp.fetch_control import broadcast, confirm
from dualplane.brokers.amqp.messages import JobCancel, JobPause, JobSpec
from dualplane.brokers.amqp.publisher import confirmed_channel
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.exceptions import CancelUnconfirmed, PauseUnconfirmed, UnknownJob
from dualplane.control_plane.frontier.jobs import FinishRule, Verdict
from dualplane.control_plane.frontier.progress import ProgressReader
from dualplane.control_plane.frontier.sitemap_seeds import seed_from_sitemaps
from dualplane.control_plane.frontier.sitemaps import SitemapProblem, SitemapStats
from dualplane.control_plane.frontier.submit import cancel_job, default_scope, pause_job, submit_job
from dualplane.core.settings import Settings

# A look that fails for these is retried with a fresh reader: a broker restarting is expected.
BROKER_ERRORS = (pika.exceptions.AMQPError, KafkaException, OSError)
BROKERS_UNREACHABLE = "brokers unreachable"  # how the verdict of such a look begins

Look = tuple[dict[str, Any] | None, Verdict]
"""One look at a job: its newest progress snapshot (None: none read yet) and the rule's verdict."""


class JobClient:
    """Submits crawl jobs and follows them to their end, against the brokers ``settings`` name."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def spec(
        self,
        job_id: str,
        scope_urls: Iterable[str],
        *,
        allowed_domains: Sequence[str] | None = None,
        source: str = "the seeds",
        on_scope_url: Callable[[int], None] | None = None,
        **rules: Any,
    ) -> JobSpec:
        """A job's rules (``rules``: the other :class:`JobSpec` fields) with its scope: the
        ``allowed_domains`` given (empty: any domain), else the domains of ``scope_urls`` (its seeds,
        seed list and sitemaps; one pass, see :func:`~control_plane.frontier.submit.default_scope`,
        capped by ``DUALPLANE_SEEDS_MAX_SCOPE_DOMAINS``; ``on_scope_url`` counts the pass)."""
        if allowed_domains is None:
            allowed_domains = default_scope(
                scope_urls, max_domains=self.settings.seeds.max_scope_domains, source=source,
                on_seed=on_scope_url,
            )  # fmt: skip
        return JobSpec(job_id=job_id, allowed_domains=tuple(allowed_domains), **rules)

    def crawl(
        self,
        seeds: Iterable[str],
        *,
        job_id: str | None = None,
        scope_urls: Iterable[str] | None = None,
        allowed_domains: Sequence[str] | None = None,
        source: str = "the seeds",
        on_scope_url: Callable[[int], None] | None = None,
        on_seed: Callable[[int], None] | None = None,
        **rules: Any,
    ) -> tuple[JobSpec, int]:
        """Submit a crawl job of ``seeds``: its rules (see :meth:`spec`; the scope from ``scope_urls``,
        which default to the seeds, then read twice: give a collection or a seed list, not an
        iterator), then the seeds (see :meth:`submit`). The job's id is ``job_id`` or a new one;
        returns the job's rules and the seeds sent. Follow it with :meth:`wait`."""
        spec = self.spec(
            job_id or f"job-{uuid.uuid4().hex[:12]}", seeds if scope_urls is None else scope_urls,
            allowed_domains=allowed_domains, source=source, on_scope_url=on_scope_url, **rules,
        )  # fmt: skip
        return spec, self.submit(spec, seeds, on_seed)

    def submit(
        self, spec: JobSpec, seeds: Iterable[str], on_seed: Callable[[int], None] | None = None
    ) -> int:
        """Submit ``spec`` and then its ``seeds``, each confirmed by RabbitMQ; the seeds sent (see
        :func:`~control_plane.frontier.submit.submit_job`). The connection is closed on return:
        following a job reads Kafka, and an idle AMQP connection would miss its heartbeats."""
        with self._declared() as (channel, topology):
            return submit_job(channel, topology, spec, seeds, on_seed)

    def seed_from_sitemaps(
        self,
        spec: JobSpec,
        sitemaps: Iterable[str],
        robots_of: Iterable[str] = (),
        on_problem: Callable[[SitemapProblem], None] = lambda _problem: None,
    ) -> SitemapStats:
        """Submit the pages of ``sitemaps`` (and of those the robots.txt of ``robots_of``'s hosts name)
        as seeds of ``spec``'s job, submitted already; each bad sitemap is a dead letter with its reason
        (see :func:`~control_plane.frontier.sitemap_seeds.seed_from_sitemaps`)."""
        with self._declared() as (channel, topology):
            return seed_from_sitemaps(
                channel, topology, spec, fetch=self.settings.fetch, sitemaps=sitemaps, robots_of=robots_of,
                on_problem=on_problem,
            )  # fmt: skip

    def cancel(self, job_id: str, *, force: bool = False, wait_s: float | None = None) -> int | None:
        """Cancel the job on every shard, confirmed by RabbitMQ: its frontiers admit none of its URLs
        from then on, drop its backlog and end its unfinished tasks, which fetchers then drop
        unfetched; :class:`FinishRule` calls it cancelled once a shard's snapshot says so.

        :class:`UnknownJob` when no shard has published progress for ``job_id`` (a mistyped id would
        otherwise be "cancelled" silently, and a cancel is final: that id could never run); ``force``
        sends the cancel anyway, for a job submitted a moment ago, before its first snapshot.

        With ``wait_s``, returns only once no fetcher will start a fetch of the job: a shard's
        snapshot says it is cancelled (a fetcher starting later reads that before its first task),
        and every fetcher running now confirmed it (see :mod:`brokers.amqp.fetch_control`); returns
        how many fetchers confirmed. :class:`CancelUnconfirmed` if that takes longer than ``wait_s``."""
        if not force and self.progress(job_id) is None:
            raise UnknownJob(
                f"no frontier shard has published progress for job {job_id!r}, so nothing was cancelled: "
                "check the id (`dualplane status` lists the jobs); for a job submitted a moment ago, "
                "wait a few seconds or add --force"
            )
        deadline = time.monotonic() + (wait_s or 0.0)
        with self._declared() as (channel, topology):
            cancel_job(channel, topology, job_id)
        if wait_s is None:
            return None
        cancel = JobCancel(job_id=job_id)
        return self._confirmed(
            cancel,
            lambda: bool((self.progress(job_id) or {}).get("cancelled_at")),
            deadline,
            wait_s,
            "no frontier shard",
        )

    def pause(self, job_id: str, *, wait_s: float | None = None) -> int | None:
        """Pause the job on every shard, confirmed by RabbitMQ: its frontiers issue none of its tasks
        and keep its backlog (new links of it join the backlog), and fetchers send its queued tasks
        back unfetched, not counted as attempts, until :meth:`resume`. Nothing of it is lost.

        :class:`UnknownJob` as for :meth:`cancel`. With ``wait_s``, returns only once no fetcher will
        start a fetch of the job: every shard's snapshot says it is paused, and every fetcher running
        now confirmed it (fetches already running finish first); returns how many confirmed.
        :class:`PauseUnconfirmed` if that takes longer than ``wait_s``."""
        self._known(job_id)
        deadline = time.monotonic() + (wait_s or 0.0)
        with self._declared() as (channel, topology):
            pause_job(channel, topology, job_id, paused=True)
        if wait_s is None:
            return None
        pause = JobPause(job_id=job_id, paused=True)
        return self._confirmed(
            pause, lambda: self._paused_everywhere(job_id), deadline, wait_s, "not every frontier shard"
        )

    def resume(self, job_id: str) -> None:
        """Let a paused job go on: every shard issues its backlog again, and every running fetcher is
        told at once (one that misses it learns it from the snapshots within seconds). Resuming a job
        that is not paused changes nothing. :class:`UnknownJob` as for :meth:`cancel`."""
        self._known(job_id)
        with self._declared() as (channel, topology):
            pause_job(channel, topology, job_id, paused=False)
            broadcast(channel, topology, JobPause(job_id=job_id, paused=False))

    def _confirmed(
        self,
        control: JobCancel | JobPause,
        recorded: Callable[[], bool],
        deadline: float,
        wait_s: float,
        shards: str,
    ) -> int:
        """Wait until ``recorded()`` (the shards took ``control``), then until every running fetcher
        answered it; how many answered. The ``…Unconfirmed`` of ``control`` past ``deadline``."""
        verb, unconfirmed = (
            ("cancel", CancelUnconfirmed) if isinstance(control, JobCancel) else ("pause", PauseUnconfirmed)
        )
        job_id = control.job_id
        while not recorded():
            if time.monotonic() > deadline:
                raise unconfirmed(
                    f"{shards} recorded the {verb} of job {job_id!r} within {wait_s:g} s: is the "
                    f"frontier running (`dualplane run frontier`)? The {verb} stays queued for it"
                )
            time.sleep(0.2)
        connection = amqp.connect(self.settings.amqp)
        try:
            left_s = max(0.0, deadline - time.monotonic())
            answered, running = confirm(connection, Topology(self.settings.queues), control, left_s)
        finally:
            connection.close()
        if answered < running:
            raise unconfirmed(
                f"{answered} of {running} running fetcher(s) confirmed the {verb} of job {job_id!r} within "
                f"{wait_s:g} s; the others may still fetch its pages in flight. Check `dualplane status`, "
                "or wait longer (--timeout)"
            )
        return answered

    def _known(self, job_id: str) -> None:
        if self.progress(job_id) is None:
            raise UnknownJob(
                f"no frontier shard has published progress for job {job_id!r}: check the id "
                "(`dualplane status` lists the jobs)"
            )

    def _paused_everywhere(self, job_id: str) -> bool:
        """Whether every shard that published the job's progress has it paused now."""
        with ProgressReader(self.settings) as reader:
            reader.refresh()
            shards = reader.latest.get(job_id, {})
            return bool(shards) and all(snapshot.get("paused_at") for snapshot in shards.values())

    @contextlib.contextmanager
    def _declared(self) -> Iterator[tuple[BlockingChannel, Topology]]:
        """A confirmed channel on a connection of its own, the topology declared; closed on exit."""
        connection = amqp.connect(self.settings.amqp)
        try:
            channel = confirmed_channel(connection)
            yield channel, Topology.declared(self.settings.queues, channel)
        finally:
            connection.close()

    def progress(self, job_id: str) -> dict[str, Any] | None:
        """The job's progress now, added up over the shards (None: nothing published yet)."""
        with ProgressReader(self.settings) as reader:
            return reader.job(job_id)

    def follow(
        self,
        job_id: str,
        *,
        timeout_s: float,
        seeds: int | None = None,
        quiet_s: float = 3.0,
        every_s: float = 0.5,
    ) -> Iterator[Look]:
        """A look at the job every ``every_s`` until :class:`FinishRule` (told the ``seeds`` submitted)
        calls it finished or cancelled, or ``timeout_s`` passes; the last look says which. A stalled
        verdict is yielded like any other (:meth:`wait` gives up on it). A look that fails (Kafka
        restarting) yields a verdict saying so and is retried with a fresh reader."""
        rule = FinishRule.from_settings(self.settings, quiet_s=quiet_s, seeds=seeds)
        deadline = time.monotonic() + timeout_s
        reader: ProgressReader | None = None
        snapshot: dict[str, Any] | None = None
        try:
            while time.monotonic() < deadline:
                try:
                    reader = reader or ProgressReader(self.settings)
                    snapshot = reader.job(job_id) or snapshot
                    verdict = rule.judge(snapshot)
                except BROKER_ERRORS as error:
                    _dropped(reader)
                    reader = None
                    verdict = Verdict(False, f"{BROKERS_UNREACHABLE}: {type(error).__name__}; retrying")
                yield snapshot, verdict
                if verdict.over:
                    return
                time.sleep(every_s)
        finally:
            _dropped(reader)

    def wait(
        self,
        job_id: str,
        *,
        timeout_s: float,
        seeds: int | None = None,
        on_look: Callable[[Look], None] | None = None,
        quiet_s: float = 3.0,
        every_s: float = 0.5,
    ) -> Look:
        """Follow the job (see :meth:`follow`) until it is finished, cancelled or stalled, or
        ``timeout_s`` passes; ``on_look`` sees every look. The last look: its verdict says which
        (neither finished, cancelled nor stalled: the time ran out)."""
        look: Look = (None, Verdict(False, f"no look at job {job_id} within {timeout_s:g} s"))
        for look in self.follow(job_id, timeout_s=timeout_s, seeds=seeds, quiet_s=quiet_s, every_s=every_s):
            if on_look is not None:
                on_look(look)
            if look[1].stalled:  # something is broken: say so instead of waiting out the timeout
                break
        return look


def _dropped(reader: ProgressReader | None) -> None:
    """Close ``reader`` if there is one, whatever state its connection is in."""
    if reader is not None:
        with contextlib.suppress(*BROKER_ERRORS):
            reader.close()
