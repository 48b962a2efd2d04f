"""The S3 sink's Prometheus metrics: what it archived (files, records, bytes, dead letters) and its lag.

The counts are the ones the sink keeps for itself (``S3Sink.stats``), read when scraped; a record
counts once its file is complete in S3. The lag per topic is what is not archived yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dualplane.brokers.kafka.metrics import watch_lag
from dualplane.connectors.sink.lag import sink_topics
from dualplane.core import metrics

if TYPE_CHECKING:
    from dualplane.connectors.sink.service import S3Sink

ARCHIVED = ("files", "records", "bytes", "dead_letters")


def watch(sink: S3Sink) -> None:
    """Export the sink's counts and its consumer group's lag on each topic it archives."""
    metrics.probe(
        "dualplane_sink_archived",
        "What the S3 sink completed in S3 since it started: files, records, bytes, dead letters",
        lambda: [({"what": what}, float(sink.stats[what])) for what in ARCHIVED],
        labels=("what",),
        kind="counter",
    )
    settings = sink.settings
    watch_lag(settings.kafka, settings.sink_group, sink_topics(settings))
