"""How far the S3 sink is behind: per topic, the records its consumer group has not committed yet.

A record is committed only once the file holding it is complete in S3, so this lag is exactly what is
not archived yet (including the open files' records, which idle flushing writes after
``DUALPLANE_SINK_IDLE_FLUSH_S``).
"""

from __future__ import annotations

from dualplane.brokers.kafka.lag import consumer_lag
from dualplane.core.settings import Settings


def sink_topics(settings: Settings) -> list[str]:
    """The topics the configured streams read (``DUALPLANE_SINK_STREAMS``)."""
    by_stream = {"warc": settings.topics.pages_raw, "avro": settings.topics.records}
    return [by_stream[stream] for stream in settings.sink.stream_names]


def sink_lag(settings: Settings, *, timeout_s: float = 10.0) -> dict[str, int]:
    """``{topic: records not yet archived}`` for each stream of the sink."""
    return {
        topic: consumer_lag(settings.kafka, settings.sink_group, topic, timeout_s=timeout_s)
        for topic in sink_topics(settings)
    }
