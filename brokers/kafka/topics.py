"""The data plane's Kafka topics, created idempotently with their partitions and retention.

``pages.raw`` keeps raw HTML long enough to replay extraction (``DUALPLANE_TOPIC_PAGES_RAW_RETENTION_MS``)
and stores batches compressed; ``fetch.events`` and ``records`` keep a week; the schema and
throttle-state topics are compacted (latest value per key forever).

Message sizes: a body larger than ``DUALPLANE_FETCH_INLINE_BODY_MAX_BYTES`` travels as a claim check
(see ``connectors/storage/claim_check.py``), so ``pages.raw`` and the dead letters (which carry a raw page
unchanged) need room for an inline body plus its envelope, not for the largest page fetched.
"""

from __future__ import annotations

from brokers.kafka import clients
from brokers.kafka.schema_topic import publish_schemas
from core.settings import Settings

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
        topics.throttle_state: {"cleanup.policy": "compact"},
        topics.schemas: {"cleanup.policy": "compact"},
    }


def ensure_data_plane_topics(settings: Settings) -> None:
    """Create every data-plane topic that does not exist yet (existing ones are not altered)."""
    compacted_partitions = 1  # tiny, read end to end by every process: one partition suffices
    existing = clients.topic_names(settings.kafka)  # one metadata request, not one per topic
    for name, config in topic_configs(settings).items():
        if name in existing:
            continue
        partitions = (
            compacted_partitions if config.get("cleanup.policy") == "compact" else settings.topics.partitions
        )
        clients.ensure_topics(settings.kafka, [name], partitions=partitions, config=config)


def prepare_data_plane(settings: Settings) -> None:
    """What every data-plane service does first: create the topics and publish every schema to the
    compacted schema topic, so any consumer can resolve any record's fingerprint."""
    ensure_data_plane_topics(settings)
    publish_schemas(settings.kafka, settings.topics.schemas)
