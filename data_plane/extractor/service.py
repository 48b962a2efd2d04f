"""The extractor service: ``pages.raw`` in; Avro records and dead letters out, exactly once.

Consume-transform-produce with Kafka transactions: for each batch of raw pages the extractor
opens a transaction, produces one ``page_record`` per page to ``records`` (key: the canonical URL,
so downstream can upsert) or a dead letter (with the reason and the source topic/partition/offset)
to the dead-letter topic, adds the consumed offsets to the same transaction and commits. A
``read_committed`` consumer of ``records`` therefore sees exactly one record per page, even when
an extractor is killed mid-batch: the open transaction is aborted (or fenced) and the batch is
redone from the committed offsets. A page that reached ``pages.raw`` twice (a fetcher died between
Kafka's confirm and its ack) yields one record: the keys of handled pages are written in the same
transaction (:mod:`~data_plane.extractor.handled`) and a second copy is skipped.

Kafka in, Kafka out: the extractor talks to no other broker. A page's links reach the frontier
from the fetcher, which parses them as it fetches the page (``control_plane.fetcher.links``), so
the crawl never waits for extraction; the record still lists them (``links``), read from the
extractor's own parse with the same parser.

Large bodies: a raw page whose body was claim-checked is read back from S3 first
(:func:`~data_plane.extractor.body.resolve_body`). A reference to nothing, or to other bytes, is dead-
lettered with the reason; a body over ``DUALPLANE_EXTRACT_MAX_HTML_BYTES`` is dead-lettered as
``oversize: ...`` without being parsed (nor downloaded). When S3 does not answer, the pages before
the one waiting are committed, and the extractor resumes at that page's offset once S3 is back: a
passing outage never turns good pages into dead letters, and nothing is skipped.

Latest state and change events: each record also goes to the compacted ``records.latest`` (keyed
by the page's URL, partitioned like ``pages.raw``), and a ``change_event`` to ``records.changes``
when its price, currency, availability, title or main-text fingerprint differ from the URL's
previous record, in the same transaction (:mod:`~data_plane.extractor.latest`). A 304 raw page
(fetch outcome ``not_modified``) makes no record at all: the URL's latest record stands.

A schema registry that does not answer (registry mode) is waited out the same way: nothing is
dead-lettered for it. Settings: ``DUALPLANE_TOPIC_*``, ``DUALPLANE_EXTRACT_*``, ``DUALPLANE_S3_*``,
``DUALPLANE_SCHEMA_REGISTRY_*``.
"""

from __future__ import annotations

import faulthandler
import functools
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import (
    ENVELOPE_HEADROOM_BYTES,
    prepare_data_plane,
    raw_page_max_message_bytes,
)
from dualplane.connectors.storage.claim_check import ClaimCheckStore
from dualplane.connectors.storage.exceptions import ClaimCheckUnavailable
from dualplane.core import metrics as core_metrics
from dualplane.core.logs import page_context
from dualplane.core.settings import ExtractSettings, Settings
from dualplane.data_plane.extract.exceptions import ExtractionFailed, PageTooLarge
from dualplane.data_plane.extractor import metrics
from dualplane.data_plane.extractor.body import BodyStore, resolve_body
from dualplane.data_plane.extractor.handled import HandledPages, page_key
from dualplane.data_plane.extractor.latest import LatestState
from dualplane.schemas.exceptions import RegistryError, RegistryUnavailable

log = logging.getLogger(__name__)

# No progress for this long (well beyond every client timeout) means a wedged client: the stacks
# of all threads go to the log, so the next stall says where it is instead of only that it is.
STALL_REPORT_S = 180.0
# Our own bounds on librdkafka's transactional calls, past their own timeouts (30 s; commit 60 s):
# after a broker restart they have been seen to block for minutes (clients.within).
CALL_BOUND_S = 60.0
COMMIT_BOUND_S = 90.0
# send_offsets_to_transaction ignores its own timeout while the group coordinator is away
# (librdkafka#5456: the coordinator request's deadline is never checked), so after a Kafka restart
# it blocked until CALL_BOUND_S, stalling extraction a minute. It is a few ms on a healthy broker:
# a tight bound costs at most a redone batch (the successor producer fences this one).
SEND_OFFSETS_TIMEOUT_S = 10.0
SEND_OFFSETS_BOUND_S = 15.0
NOT_MODIFIED = 304
STORE_RETRY_S = 5.0  # back-off when the claim-check store does not answer (boto3 has retried by then)
# consume() waits this long for a full batch: short, so that a page's record is visible soon after
# its page (waiting 0.5 s for 200 pages that trickle in at 50 a second delayed each by up to that).
CONSUME_WAIT_S = 0.05

ExtractFunction = Callable[..., dict[str, Any]]
"""``extract(raw_page_record, schema_version=N) -> page_record``; raises on unusable input."""


def default_extract(settings: ExtractSettings | None = None) -> ExtractFunction:
    """:func:`~data_plane.extract.record.extract_record` with the plugin each page's job or domain chose
    (:class:`~data_plane.extract.record.Extraction`), loaded and warmed (so batch one does not stall).
    A crawl reads many pages of each host: the process learns which hosts' pages resiliparse reads as
    trafilatura does (:mod:`~data_plane.extract.text.site_trust`), and reads their later pages by it."""
    from dualplane.data_plane.extract.plugins import ExtractorChoice  # noqa: PLC0415 (heavy, loaded on use)
    from dualplane.data_plane.extract.record import Extraction, warm_up  # noqa: PLC0415
    from dualplane.data_plane.extract.text.site_trust import SiteTrust  # noqa: PLC0415

    warm_up()
    return Extraction(ExtractorChoice(settings.extractor_by_domain if settings else None), SiteTrust())


class Extractor:
    """One extractor process; run several in one consumer group to share the partitions."""

    def __init__(
        self, settings: Settings, extract: ExtractFunction | None = None, bodies: BodyStore | None = None
    ) -> None:
        self.settings = settings
        self.extract = extract or default_extract(settings.extract)
        self.bodies = bodies or ClaimCheckStore.from_settings(settings.s3)
        self.schema_version = settings.extract.schema_version or schemas.latest_version("page_record")
        self.codec = schemas.codec_for(settings)
        self.records_topic = settings.topics.records
        self.group_id = f"{settings.kafka.group_prefix}-extractor"
        # One per process, kept when ``run`` starts over with new clients: the new producer's
        # init_transactions then aborts an abandoned producer's open transaction at once, instead of
        # it holding back read_committed readers and this group's offsets until its timeout. Unique
        # to the process, since offsets are committed with the consumer group's metadata (KIP-447),
        # which fences a zombie of another process without a shared transactional id.
        self.transactional_id = f"{self.group_id}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        # A stable slot identity instead (DUALPLANE_EXTRACT_INSTANCE_ID): the same transactional id and
        # a static group membership let a restarted extractor take over from its killed predecessor
        # at once. Two running extractors must never share it (each would fence the other).
        self.instance_id = settings.extract.instance_id
        if self.instance_id:
            self.transactional_id = f"{self.group_id}-{self.instance_id}"
        self._stop = threading.Event()
        self.handled = HandledPages(settings)
        self.latest = LatestState(settings, self.codec)
        self.pages = 0
        self.records = 0
        self.dead_lettered = 0
        self._dead_letter_stages: list[str] = []  # of the open transaction, counted once it commits
        self._consumed = core_metrics.CONSUMED.labels(settings.topics.pages_raw)
        self.duplicates = 0
        self.not_modified = 0  # 304 pages: handled, no record (the latest record stands)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        """Nothing to release between runs: ``run`` closes its clients when it returns."""

    def run(self) -> None:
        """Consume until stopped; after any failure start over from the committed offsets."""
        prepared = False
        while not self._stop.is_set():
            try:
                if not prepared:  # inside the loop: Kafka may still be starting, or a topic be brand new
                    prepare_data_plane(self.settings)
                    self.handled.prepare()
                    self.latest.prepare()
                    prepared = True
                self._run_once()
            except (ClaimCheckUnavailable, RegistryUnavailable) as error:  # an outage: no traceback, wait
                log.warning("extractor: %s; resuming at the committed offsets in %s s", error, STORE_RETRY_S)
                self._stop.wait(STORE_RETRY_S)
            except Exception as error:
                if not clients.is_outage(error):
                    log.exception("extractor: failure; resuming from the committed offsets in 2 s")
                else:  # a broker restarting: nothing for a person to do, nothing lost
                    log.warning("extractor: Kafka unavailable (%s); resuming in 2 s", error)
                self._stop.wait(2.0)

    def _run_once(self) -> None:
        # A killed extractor's open transaction holds back read_committed readers until it times
        # out (its successor has another id, so cannot fence it); transactions are kept well under
        # the timeout by committing every DUALPLANE_EXTRACT_TRANSACTION_MS, so one slow page never
        # exceeds it.
        producer = clients.producer(
            self.settings.kafka,
            **{
                "transactional.id": self.transactional_id,
                "linger.ms": 20,
                "transaction.timeout.ms": 60_000,
                "message.max.bytes": self._max_dead_letter_bytes() + ENVELOPE_HEADROOM_BYTES,
            },
        )
        clients.within(lambda: producer.init_transactions(30), CALL_BOUND_S, "init_transactions")
        membership = {"group.instance.id": self.instance_id} if self.instance_id else {}
        consumer = clients.consumer(self.settings.kafka, self.group_id, **membership)
        self.handled.forget()  # a new consumer, a new assignment: read what was handled anew
        self.latest.forget()
        try:
            forget = lambda _consumer, parts: self._forget([p.partition for p in parts])  # noqa: E731
            consumer.subscribe([self.settings.topics.pages_raw], on_revoke=forget, on_lost=forget)
            while not self._stop.is_set():
                faulthandler.dump_traceback_later(STALL_REPORT_S)  # re-armed on every pass
                batch = [
                    m
                    for m in consumer.consume(self.settings.extract.batch_size, CONSUME_WAIT_S)
                    if _usable(m)
                ]
                if batch:
                    self._consumed.inc(len(batch))
                    self._transact(batch, consumer, producer)
        finally:
            faulthandler.cancel_dump_traceback_later()
            clients.close_within(consumer)

    def _transact(self, batch: list[Message], consumer: Consumer, producer: Producer) -> None:
        """Process ``batch`` in one or more transactions, each committed within the time budget.

        :class:`ClaimCheckUnavailable` once the pages before the one whose body S3 did not serve
        are committed: the caller waits and resumes at that page.
        """
        partitions = {message.partition() or 0 for message in batch}
        self.handled.load(partitions)
        self.latest.load(partitions)
        budget_s = self.settings.extract.transaction_ms / 1000
        done = 0
        while done < len(batch):
            faulthandler.dump_traceback_later(STALL_REPORT_S)
            producer.begin_transaction()
            started = time.monotonic()
            records_before, self._dead_letter_stages = self.records, []
            waiting: ClaimCheckUnavailable | None = None
            try:
                part = []
                for message in batch[done:]:
                    try:
                        self._handle(message, producer)
                    except ClaimCheckUnavailable as error:
                        waiting = error  # nothing of this page was produced; its offset stays uncommitted
                        break
                    part.append(message)
                    if time.monotonic() - started > budget_s:
                        break  # commit what is done, go on in a new transaction
                if part:
                    metadata = consumer.consumer_group_metadata()
                    send = functools.partial(
                        producer.send_offsets_to_transaction,
                        _next_offsets(part),
                        metadata,
                        SEND_OFFSETS_TIMEOUT_S,
                    )
                    clients.within(send, SEND_OFFSETS_BOUND_S, "send_offsets")
                    commit = functools.partial(producer.commit_transaction, 60)
                    clients.within(commit, COMMIT_BOUND_S, "commit_transaction")
                    self._committed(records_before, self.latest.committed())
                    self.handled.committed()
                else:
                    _abort(producer)
                    self._aborted()
            except clients.ClientWedged:
                # Abandon the producer: its successor, with the same transactional id, fences it and
                # aborts its open transaction when it initialises (the broker would after the timeout),
                # so nothing of it can become visible later.
                self._aborted()
                raise
            except Exception:
                self._aborted()
                _abort(producer)
                raise  # the caller rebuilds the consumer, which resumes at the committed offsets
            if waiting is not None:
                raise waiting
            done += len(part)

    def _handle(self, message: Message, producer: Producer) -> None:
        self.pages += 1
        try:
            raw = self.codec.decode(message.value() or b"").record
        except RegistryError:
            raise  # the registry is down or refusing us: _transact aborts, we resume at the committed offsets
        except Exception as error:  # bad bytes must not stop the service: dead-letter them
            self._dead_letter(message, producer, f"undecodable raw page: {error}", "decode", None)
            return
        with page_context(**raw):
            self._handle_page(message, raw, producer)

    def _handle_page(self, message: Message, raw: Mapping[str, Any], producer: Producer) -> None:
        partition, key = (
            message.partition() or 0,
            page_key(str(raw["job_id"]), str(raw["url"]), str(raw["task_id"])),
        )
        if self.handled.seen(partition, key):
            self.duplicates += 1
            log.info("extractor: %s (job %s) was handled before; skipping its copy at %s[%s]@%s",
                     raw["url"], raw["job_id"], message.topic(), partition, message.offset())  # fmt: skip
            return
        self._extract(message, raw, producer)
        # Only once the page has its record or dead letter: a page left for later (S3 did not
        # answer) must not count as handled when the transaction commits the pages before it.
        self.handled.add(producer, partition, key, message.offset() or 0)

    def _extract(self, message: Message, raw: Mapping[str, Any], producer: Producer) -> None:
        if raw.get("status") == NOT_MODIFIED:
            # A 304 has no body: the page is the one of the URL's latest record. No record, so
            # records.latest keeps that page (and its fetched_at) and no change event is made.
            self.not_modified += 1
            return
        try:
            page = resolve_body(raw, self.bodies, max_bytes=self.settings.extract.max_html_bytes)
        except ClaimCheckUnavailable:
            raise  # a passing outage: _transact commits up to this page and the service waits
        except Exception as failure:  # oversize, a reference to nothing: permanent, dead-letter it
            stage = "limit" if isinstance(failure, PageTooLarge) else "claim-check"
            reason = failure.reason if isinstance(failure, ExtractionFailed) else repr(failure)
            self._dead_letter(message, producer, reason, stage, raw)
            return
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            record = self.extract(page, schema_version=self.schema_version)
            value = self.codec.encode("page_record", record, self.schema_version, topic=self.records_topic)
        except RegistryError:
            raise  # down, or refusing the version: never the page's fault, so never a dead letter
        except Exception as error:
            self._dead_letter(message, producer, f"{type(error).__name__}: {error}", "extract", page)
            return
        producer.produce(self.records_topic, value, str(record["canonical_url"]).encode())
        url_key = (message.key() or str(raw["url"]).encode()).decode()  # pages.raw's key: the task's URL
        self.latest.write(producer, message.partition() or 0, url_key, record, value)
        metrics.EXTRACT_SECONDS.observe(time.perf_counter() - started)
        metrics.EXTRACT_CPU_SECONDS.observe(time.thread_time() - cpu_started)
        self.records += 1

    def _dead_letter(
        self, message: Message, producer: Producer, reason: str, stage: str, page: Mapping[str, Any] | None
    ) -> None:
        log.warning("extractor: dead-lettering %s[%s]@%s: %s", message.topic(), message.partition(),
                    message.offset(), reason)  # fmt: skip
        payload, reason = message.value() or b"", reason[:2000]
        if len(payload) > self._max_dead_letter_bytes() - ENVELOPE_HEADROOM_BYTES:
            # Only a pages.raw made with a larger message limit holds such messages: point at the
            # original rather than fail to produce (which would stop the extractor on this page).
            reason += f" [payload of {len(payload)} bytes left out; read it at the source offset]"
            payload = b""
        record: dict[str, Any] = {
            "source_topic": message.topic(),
            "source_partition": message.partition(),
            "source_offset": message.offset(),
            "key": message.key(),
            "payload": payload,
            "reason": reason,
            "stage": stage,
            "failed_at": datetime.now(UTC),
            "job_id": page.get("job_id") if page else None,
            "trace_id": page.get("trace_id") if page else None,
        }
        topic = self.settings.topics.dead_letters
        producer.produce(topic, self.codec.encode("dead_letter", record, topic=topic), message.key())
        self.dead_lettered += 1
        self._dead_letter_stages.append(stage)

    def _forget(self, partitions: list[int]) -> None:
        """Partitions revoked or lost: their state is their next owner's to restore."""
        self.handled.forget(partitions)
        self.latest.forget(partitions)

    def _aborted(self) -> None:
        self.handled.aborted()
        self.latest.aborted()

    def _committed(self, records_before: int, changes: int) -> None:
        """Count what the transaction just committed (the shared produce and dead-letter counters)."""
        records = self.records - records_before
        core_metrics.PRODUCED.labels(self.records_topic).inc(records)
        core_metrics.PRODUCED.labels(self.settings.topics.records_latest).inc(records)
        if changes:
            core_metrics.PRODUCED.labels(self.settings.topics.changes).inc(changes)
        if self._dead_letter_stages:
            core_metrics.PRODUCED.labels(self.settings.topics.dead_letters).inc(len(self._dead_letter_stages))
        for stage in self._dead_letter_stages:
            core_metrics.DEAD_LETTERS.labels("extractor", stage).inc()

    def _max_dead_letter_bytes(self) -> int:
        """The dead-letter topic's message limit (a raw page, unchanged, plus the letter around it)."""
        return raw_page_max_message_bytes(self.settings) + ENVELOPE_HEADROOM_BYTES


def _abort(producer: Producer) -> None:
    clients.within(lambda: producer.abort_transaction(30), CALL_BOUND_S, "abort_transaction")


def _usable(message: Message) -> bool:
    error = message.error()
    if error is None:
        return True
    if error.code() != KafkaError._PARTITION_EOF:
        log.warning("extractor: consumer error %s", error)
    return False


def _next_offsets(batch: list[Message]) -> list[TopicPartition]:
    """The offsets to commit after ``batch``: one past the last message of each partition."""
    last: dict[tuple[str, int], int] = {}
    for message in batch:
        key = (message.topic() or "", message.partition() or 0)
        last[key] = max(last.get(key, -1), message.offset() or 0)
    return [TopicPartition(topic, partition, offset + 1) for (topic, partition), offset in last.items()]
