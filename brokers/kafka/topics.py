"""The data plane's Kafka topics, created idempotently with their partitions and retention.

``pages.raw`` keeps raw HTML long enough to replay extraction (``DUALPLANE_TOPIC_PAGES_RAW_RETENTION_MS``)
and stores batches compressed; ``fetch.events`` and ``records`` keep a week; the schema and
throttle-state topics are compacted (latest value per key forever).

Message sizes: a body larger than ``DUALPLANE_FETCH_INLINE_BODY_MAX_BYTES`` travels as a claim check
(see ``connectors/storage/claim_check.py``), so ``pages.raw`` and the dead letters (which carry a raw page
unchanged) need room for an inline body plus its envelope, not for the largest page fetched.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.schema_topic import publish_schemas
from dualplane.core.settings import KafkaSettings, Settings

WEEK_MS = str(7 * 86_400_000)
ENVELOPE_HEADROOM_BYTES = 64 * 1024
"""Room for everything in a message besides the body: URLs, headers, redirect chain, a reason."""


def raw_page_max_message_bytes(settings: Settings) -> int:
    """The largest ``raw_page`` message: the largest inline body plus its envelope."""
    inline = min(settings.limits.max_page_bytes, settings.fetch.inline_body_max_bytes)
    return inline + ENVELOPE_HEADROOM_BYTES


def topic_configs(settings: Settings) -> dict[str, dict[str, str]]:
    topics = settings.topics
    max_raw = raw_page_max_message_bytes(settings)
    return {
        topics.pages_raw: {
            "retention.ms": str(topics.pages_raw_retention_ms),
            "compression.type": "producer",
            "max.message.bytes": str(max_raw),
        },
        topics.fetch_events: {"retention.ms": WEEK_MS},
        topics.records: {"retention.ms": WEEK_MS},
        topics.dead_letters: {
            "retention.ms": str(30 * 86_400_000),
            "max.message.bytes": str(max_raw + ENVELOPE_HEADROOM_BYTES),
        },
        # Like pages.raw's partitions (ensure_data_plane_topics), so a page's copies meet in one.
        topics.extracted: {
            "cleanup.policy": "compact,delete",
            "retention.ms": str(topics.extracted_retention_ms),
        },
        # The latest record per URL: compacted (one value per key once cleaned, kept forever), keyed and
        # partitioned like pages.raw, so an extractor restores the state of the partitions it owns.
        # Segments roll daily so that compaction, which skips the active segment, keeps up.
        topics.records_latest: {"cleanup.policy": "compact", "segment.ms": str(86_400_000)},
        topics.changes: {"retention.ms": WEEK_MS},
        topics.throttle_state: {"cleanup.policy": "compact"},
        topics.schemas: {"cleanup.policy": "compact"},
    }


def ensure_data_plane_topics(settings: Settings, *, pages_raw_partitions: int = 0) -> tuple[int, int] | None:
    """Create every data-plane topic that does not exist yet (existing ones are not altered), and give
    ``pages.raw`` at least ``pages_raw_partitions`` partitions: one per extractor process, since a
    partition is read by one consumer of a group. Returns (before, after) if ``pages.raw`` grew.

    Growing an existing ``pages.raw`` moves where new messages of a URL land (the partition is the
    hash of the canonical URL modulo the count): copies of a page before and after the change may be
    in two partitions, so per-URL order across the change is lost, and a page refetched in flight
    across it can be extracted twice. Grow it between crawls (see docs/crawling.md, "Scaling out").
    """
    compacted_partitions = 1  # tiny, read end to end by every process: one partition suffices
    existing = clients.topic_names(settings.kafka)  # one metadata request, not one per topic
    for name, config in topic_configs(settings).items():
        if name in existing:
            continue
        partitions = (
            compacted_partitions if config.get("cleanup.policy") == "compact" else settings.topics.partitions
        )
        if name == settings.topics.pages_raw or name in copartitioned_topics(settings):
            partitions = max(settings.topics.partitions, pages_raw_partitions)
        clients.ensure_topics(settings.kafka, [name], partitions=partitions, config=config)
    return grow_partitions(settings.kafka, settings.topics.pages_raw, pages_raw_partitions)


def grow_partitions(kafka: KafkaSettings, topic: str, at_least: int) -> tuple[int, int] | None:
    """Give ``topic`` at least ``at_least`` partitions (Kafka can add partitions, never remove them);
    (before, after) if it grew, None if it had enough."""
    admin = clients.admin(kafka)
    have = len(admin.list_topics(topic, timeout=30).topics[topic].partitions)
    if have >= at_least:
        return None
    for future in admin.create_partitions([NewPartitions(topic, at_least)], request_timeout=30).values():
        try:
            future.result()
        except KafkaException as error:  # another process grew it first: fine if it has enough now
            if error.args[0].code() != KafkaError.INVALID_PARTITIONS:
                raise
    return have, at_least


def copartitioned_topics(settings: Settings) -> tuple[str, ...]:
    """Topics whose partition ``i`` holds the extractor's state of ``pages.raw`` partition ``i``."""
    return (settings.topics.extracted, settings.topics.records_latest)


def copartition(settings: Settings, topic: str) -> int:
    """Give ``topic`` at least as many partitions as ``pages.raw``; that count."""
    admin = clients.admin(settings.kafka)
    metadata = admin.list_topics(timeout=30).topics
    wanted = len(metadata[settings.topics.pages_raw].partitions)
    grow_partitions(settings.kafka, topic, wanted)
    return wanted


def prepare_data_plane(settings: Settings) -> None:
    """What every data-plane service does first: create the topics and publish every schema to the
    compacted schema topic, so any consumer can resolve any record's fingerprint."""
    ensure_data_plane_topics(settings)
    publish_schemas(settings.kafka, settings.topics.schemas)
