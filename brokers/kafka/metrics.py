"""Consumer lag as a Prometheus gauge, read from Kafka when scraped (at most every ``LAG_TTL_S``).

Each service registers the consumer groups it runs (:func:`watch_lag`); one probe exports them all
as ``dualplane_kafka_consumer_lag{group, topic}``: messages of the topic the group has not committed.
"""

from __future__ import annotations

import threading

from dualplane.brokers.kafka.lag import consumer_lag
from dualplane.core import metrics
from dualplane.core.settings import KafkaSettings

LAG_TTL_S = 10.0  # each read opens a consumer and asks for offsets: not on every scrape

_groups: dict[tuple[str, str], KafkaSettings] = {}
_lock = threading.Lock()


def watch_lag(kafka: KafkaSettings, group: str, topics: list[str]) -> None:
    """Export the lag of ``group`` on each of ``topics``."""
    with _lock:
        for topic in topics:
            _groups[(group, topic)] = kafka
    metrics.probe(
        "dualplane_kafka_consumer_lag",
        "Messages of a topic its consumer group has not committed yet",
        _read,
        labels=("group", "topic"),
        ttl_s=LAG_TTL_S,
    )


def _read() -> list[metrics.Sample]:
    with _lock:
        groups = dict(_groups)
    return [
        ({"group": group, "topic": topic}, float(consumer_lag(kafka, group, topic, timeout_s=5)))
        for (group, topic), kafka in groups.items()
    ]
