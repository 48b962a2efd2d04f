"""The data plane's Kafka topics, created idempotently with their partitions and retention.

``pages.raw`` keeps raw HTML long enough to replay extraction (``DUALPLANE_TOPIC_PAGES_RAW_RETENTION_MS``)
and stores batches compressed; ``fetch.events`` and ``records`` keep a week; the schema and
throttle-state topics are compacted (latest value per key forever).
"""

from __future__ import annotations

from data_plane import kafka_clients
from dualplane.settings import Settings
from schemas.topic import publish_schemas

WEEK_MS = str(7 * 86_400_000)


def topic_configs(settings: Settings) -> dict[str, dict[str, str]]:
    topics = settings.topics
    max_message = str(settings.limits.max_page_bytes + 64 * 1024)
    return {
        topics.pages_raw: {
            "retention.ms": str(topics.pages_raw_retention_ms),
            "compression.type": "producer",
            "max.message.bytes": max_message,
        },
        topics.fetch_events: {"retention.ms": WEEK_MS},
        topics.records: {"retention.ms": WEEK_MS},
        topics.dead_letters: {"retention.ms": str(30 * 86_400_000), "max.message.bytes": max_message},
        topics.throttle_state: {"cleanup.policy": "compact"},
        topics.schemas: {"cleanup.policy": "compact"},
    }


def ensure_data_plane_topics(settings: Settings) -> None:
    """Create every data-plane topic that does not exist yet (existing ones are not altered)."""
    compacted_partitions = 1  # tiny, read end to end by every process: one partition suffices
    for name, config in topic_configs(settings).items():
        partitions = (
            compacted_partitions if config.get("cleanup.policy") == "compact" else settings.topics.partitions
        )
        kafka_clients.ensure_topics(settings.kafka, [name], partitions=partitions, config=config)


def prepare_data_plane(settings: Settings) -> None:
    """What every data-plane service does first: create the topics and publish every schema to the
    compacted schema topic, so any consumer can resolve any record's fingerprint."""
    ensure_data_plane_topics(settings)
    publish_schemas(settings.kafka, settings.topics.schemas)
