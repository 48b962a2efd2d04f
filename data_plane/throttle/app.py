"""The block-ratio processor: a Faust app from ``fetch.events`` to throttle commands and the state topic.

Design
------
``build_app(settings, config)`` makes a Faust app (id ``<group prefix>-throttle``) whose
:class:`~data_plane.throttle.processor.ThrottleProcessor` runs one agent on ``fetch.events``, read as
raw bytes and decoded with :func:`schemas.decode`. A value that does not decode is counted
(``stats.bad_events``) and skipped; no single event can stop the worker. Run it with
``python -m faust -A data_plane.throttle.worker --datadir DIR worker``.

Per domain (the topic's key, so one domain's events stay in one partition and one worker):

- ``buckets``: a **tumbling-window table** of one bucket per ``WINDOW_STEP_S`` of total / blocked
  (rate_limited, forbidden, blocked_challenge) / timeouts / server errors, latency and the largest
  Retry-After; the hopping window that is judged (size ``WINDOW_SIZE_S``, step ``WINDOW_STEP_S``) is
  the sum of the buckets it spans (:mod:`data_plane.throttle.windows`). Events are counted into the
  table's local store at once and each changed bucket is written to the changelog once per commit,
  before the offsets (:mod:`data_plane.throttle.buckets`), not once per event, nor once per window
  an event falls in. Buckets are **by the event's ``fetched_at``** rather than the Kafka timestamp,
  because fetched_at is when the site answered: a fetcher whose Kafka producer buffered through a
  broker outage, or a replay, still lands each fetch in the window it happened in, and tests can
  place events in time.
- ``states``: a plain table of the policy state (P_d, delay, pause, streaks) and the last command.

On every event the policy (:func:`data_plane.throttle.policy.decide`) judges the domain's window
(see :func:`~data_plane.throttle.windows.window_to_judge`), so a threshold crossing is acted on
by the very event that crosses it, not at the next timer tick. A command is first made durable in
Kafka (the state table, and the Avro command in the compacted ``throttle.state`` topic keyed by
domain; the producer is flushed, a few milliseconds) and then handed to the RabbitMQ publisher
thread (JSON, publisher confirms, never blocking the agent). So every command the fleet obeys is in
the compacted topic, and an event redelivered after a crash finds its decision already saved (the
state remembers the offset it judged last) instead of issuing it twice. Events older than
``MAX_LAG_S`` are counted but not acted on, so catching up a backlog does not replay stale commands.

Rebalances, restarts and the known caveats of Faust windowed tables
-------------------------------------------------------------------
Both tables are changelogged; with the ``memory://`` store a worker rebuilds them from the changelogs
after every start and rebalance, before its agent sees an event. What we do about the known problems:

- **Replayed events double-count** (Faust is at-least-once: events after the last committed offset
  are redelivered after a crash). Each window value keeps the partition and offset of the last event
  it counted and ignores events at or below it, so counting is effectively exactly-once. We avoid
  ``processing_guarantee="exactly_once"``, whose recovery has hung (faust-streaming#47).
- **Offsets committed ahead of the changelog** would make a crash lose counts for good (committed
  events are not redelivered). Faust flushes the producer before it commits, but its buffer's flush
  can return early; :mod:`data_plane.throttle.producer` makes it wait for every write it owes.
- **A partition with nothing committed loses what its dead owner counted**: during recovery Faust
  can take records and drop them, then relies on seeking back to the committed offset, which
  aiokafka skips when nothing (or 0) is committed. The events a worker killed before its first
  commit had counted were then never read by the next owner
  (test_a_rebalance_moves_windows_to_the_surviving_worker, about 1 run in 4). After each recovery we
  rewind such partitions to their start (:mod:`data_plane.throttle.rewind`). With ``latest``
  (``DUALPLANE_THROTTLE_OFFSET_RESET``, the default) there would be no start to go back to, as each
  new owner applies "latest" again, later: the app pins the group's start before the worker joins
  (:mod:`brokers.kafka.group_start`).
- **"Recovered" is not "caught up"**: Faust signals a rebalance complete (our ``ready``) when the
  tables are rebuilt, *before* it seeks to the committed offsets and re-reads the events after them.
  A SIGKILLed worker's last window updates may never have reached the changelog; until the new worker
  has re-read those events its windows lack them. The snapshot's ``offsets`` (last offset handled per
  partition) says how far it has read.
- **Buckets never expire by themselves** (Faust schedules expiry only for keys written through its
  table API after start, robinhood/faust#44, faust-streaming#385). A timer and every recovery drop
  buckets older than the expiry from the local store; the changelog gets ``segment.ms`` equal to the
  window expiry so Kafka's retention (Faust sets ``retention.ms`` to the expiry) really removes old
  buckets and recovery stays short, instead of replaying a week of segments.
- **Windows closed during a rebalance are lost to ``on_window_close``** (faust-streaming#193): we never
  use ``on_window_close``; decisions read the table, so nothing depends on a close callback firing.
- **``.current()`` of a hopping table is its newest, nearly empty window**: we read the oldest open
  window by its exact range instead.
- **While a rebalance recovers, no event is processed**, so reactions pause for the session timeout
  of a dead worker (``SESSION_TIMEOUT_S``, 10 s instead of Faust's 60 s) plus the recovery time.
  Commands already issued stay in force: the fleet holds the last command it got, and the
  compacted topic holds it for restarted fetchers.
- Standby replicas (Faust's default ``table_standby_replicas=1``) keep a copy of other workers'
  windows, so a surviving worker takes over a dead one's domains without replaying their changelog.
- Web pages and the snapshot show only the partitions this worker owns; with several workers,
  merge their snapshots. The daily budget is counted over the domains this worker owns.
"""

from __future__ import annotations

import logging
from typing import Any

import faust
from mode.utils.times import want_seconds

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.group_start import pin_group_start
from dualplane.brokers.kafka.topics import topic_configs
from dualplane.core import logs
from dualplane.core.settings import KafkaSettings, Settings, ThrottleSettings
from dualplane.data_plane.throttle.exceptions import InvalidThrottleConfig
from dualplane.data_plane.throttle.processor import ThrottleProcessor
from dualplane.data_plane.throttle.producer import ThrottleApp
from dualplane.data_plane.throttle.publisher import CommandPublisher


class ThrottleWorker(faust.Worker):
    """Faust's worker, logging as every dualplane process does, without its terminal spinner.

    Faust installs a coloured handler of its own format on the root logger; it is replaced by ours
    (:func:`core.logs.configure`: text lines with time, process, level and logger, or JSON with
    ``DUALPLANE_LOG_FORMAT=json``), so Faust's, aiokafka's and the processor's lines look like the
    other services'. The spinner would set the root logger to DEBUG so that it spins on every
    record, whatever ``--loglevel`` says: every debug call in aiokafka and Faust then builds a
    ``LogRecord`` only for the handler to drop it (about 6% of the processor's CPU under a crawl,
    profiled with py-spy).
    """

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        self.spinner = None  # and no spinner handler: the root logger keeps the worker's level
        logs.configure(
            logging.getLevelName(level or logging.WARNING), getattr(self.app, "log_format", "text")
        )


def build_app(
    settings: Settings, config: ThrottleSettings, publisher: CommandPublisher | None = None
) -> faust.App:
    """The processor as a Faust app; creates ``fetch.events`` and ``throttle.state`` if missing."""
    partitions = prepare_topics(settings)
    app = ThrottleApp(  # its producer's flush really waits, see data_plane.throttle.producer
        settings.throttle_app_id,
        broker=_broker_urls(settings.kafka),
        store="memory://",
        topic_partitions=partitions,
        topic_replication_factor=settings.kafka.replication_factor,
        consumer_auto_offset_reset=config.offset_reset,
        broker_session_timeout=config.session_timeout_s,
        broker_heartbeat_interval=min(3.0, config.session_timeout_s / 3),
        broker_commit_interval=config.commit_interval_s,
        table_cleanup_interval=float(config.window_step_s),
        web_enabled=config.web_port > 0,
        web_port=config.web_port or 6066,
        web_bind=config.web_bind,
        web_in_thread=False,
        Worker=ThrottleWorker,
        log_format=settings.log.format,
    )
    publisher = publisher or CommandPublisher.from_settings(settings.amqp, settings.queues.throttle_exchange)
    ThrottleProcessor(app, settings, config, partitions, publisher).install()
    declare_changelogs(app, settings)
    if config.offset_reset == "latest":  # else every owner starts from the beginning anyway
        pin_group_start(settings.kafka, settings.throttle_app_id, settings.topics.fetch_events)
    return app


def prepare_topics(settings: Settings) -> int:
    """Create the input and state topics if missing; the partition count of ``fetch.events``."""
    topics, configs = settings.topics, topic_configs(settings)
    clients.ensure_topics(
        settings.kafka,
        [topics.fetch_events],
        partitions=topics.partitions,
        config=configs[topics.fetch_events],
    )
    clients.ensure_topics(
        settings.kafka, [topics.throttle_state], partitions=1, config=configs[topics.throttle_state]
    )
    metadata = clients.admin(settings.kafka).list_topics(topics.fetch_events, timeout=30)
    return len(metadata.topics[topics.fetch_events].partitions)


def declare_changelogs(app: faust.App, settings: Settings, timeout_s: float = 30.0) -> None:
    """Create the tables' changelog topics, as Faust would, and wait until every partition has a leader.

    Faust creates them itself on start, then reads their partition count from its consumer's first
    metadata. A topic created a moment earlier can still show 0 partitions there, and every table
    write then raises ``PartitionsMismatch`` until the next metadata refresh, minutes later: the
    processor counts nothing and never throttles. Topics that exist before the worker starts, with
    leaders, are seen whole. The config is Faust's own (``Topic.declare``), so Faust's later create
    is a no-op.
    """
    for table in app.tables.values():
        topic = table.changelog_topic
        config = _changelog_config(topic.retention, topic.compacting, topic.deleting)
        config.update({key: str(value) for key, value in (topic.config or {}).items()})
        clients.ensure_topics(
            settings.kafka,
            list(topic.topics),
            partitions=topic.partitions or app.conf.topic_partitions,
            config=config,
            timeout_s=timeout_s,
        )
        clients.wait_for_leaders(settings.kafka, list(topic.topics), timeout_s=timeout_s)


def _changelog_config(retention: Any, compacting: bool | None, deleting: bool | None) -> dict[str, str]:
    """Faust's Kafka transport's mapping of a topic's retention and cleanup flags to topic config.

    Restated rather than called: ``app.transport`` would build the transport, bound to an event loop,
    long before the worker starts.
    """
    policies = (["compact"] if compacting else []) + (["delete"] if deleting else [])
    config = {"cleanup.policy": ",".join(policies)} if policies else {}
    if retention:
        config["retention.ms"] = str(int(want_seconds(retention) * 1000.0))
    return config


def _broker_urls(kafka: KafkaSettings) -> list[str]:
    if kafka.security_protocol != "PLAINTEXT":
        raise InvalidThrottleConfig(
            f"the throttle processor (Faust) supports PLAINTEXT Kafka only, not {kafka.security_protocol}; "
            "run it inside the cluster network or extend data_plane.throttle.app._broker_urls"
        )
    return [f"kafka://{server.strip()}" for server in kafka.bootstrap_servers.split(",") if server.strip()]
