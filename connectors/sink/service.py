"""``dualplane run s3-sink``: raw pages to WARC and records to Avro files in S3, exactly once.

The service builds the configured streams (``DUALPLANE_SINK_STREAMS``), checks the bucket before it
starts (a missing bucket, refused credentials or no permission end it with one line naming the setting),
then runs consumer sessions (:mod:`connectors.sink.session`) in the consumer group
``<DUALPLANE_KAFKA_GROUP_PREFIX>-s3-sink``. When S3, Kafka or the schema registry fails, the session is
dropped with its open files and nothing of them committed, and after a back-off (doubling up to
``DUALPLANE_SINK_RETRY_MAX_S``) a new session resumes from the committed offsets.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import Counter
from datetime import timedelta

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import (
    ENVELOPE_HEADROOM_BYTES,
    prepare_data_plane,
    raw_page_max_message_bytes,
)
from dualplane.connectors.sink.avro import AvroSink
from dualplane.connectors.sink.base import Sink
from dualplane.connectors.sink.compression import deflate_block, gzip_member
from dualplane.connectors.sink.exceptions import SinkMisconfigured, SinkUnavailable
from dualplane.connectors.sink.layout import Layout
from dualplane.connectors.sink.session import Session, StartOver
from dualplane.connectors.sink.upload import ArchiveStore
from dualplane.connectors.sink.warc import WarcSink
from dualplane.connectors.storage import s3
from dualplane.connectors.storage.claim_check import ClaimCheckStore
from dualplane.core.settings import Settings
from dualplane.schemas import codec_for

log = logging.getLogger(__name__)

FIRST_RETRY_S = 1.0
STALE_UPLOAD_AGE = timedelta(hours=1)  # older multipart uploads under the prefix were left by killed sinks
S3_TIMEOUT_S = 30.0
SESSION_TIMEOUT_MS = 10_000  # a crashed sink's partitions move after 10 s, not the default 45 s
S3_ATTEMPTS = 4  # boto3's own retries of one request, before the session gives up and backs off


def build_sinks(settings: Settings) -> list[Sink]:
    """The streams ``DUALPLANE_SINK_STREAMS`` names, built from the settings."""
    codec = codec_for(settings)
    sinks: list[Sink] = []
    for stream in settings.sink.stream_names:
        if stream == "warc":
            bodies = ClaimCheckStore.from_settings(settings.s3)
            sinks.append(WarcSink(settings.topics.pages_raw, codec, bodies, gzip=gzip_member(settings.sink)))
        else:
            sinks.append(AvroSink(settings.topics.records, codec, deflate=deflate_block(settings.sink)))
    return sinks


class S3Sink:
    """The service: sessions one after the other until stopped; ``run`` returns when stopped."""

    name = "s3-sink"

    def __init__(self, settings: Settings, sinks: list[Sink], store: ArchiveStore) -> None:
        self.settings = settings
        self.sinks = sinks
        self.store = store
        self.layout = Layout.from_settings(settings.sink)
        self.stopping = threading.Event()
        self.session: Session | None = None
        self.stats: Counter[str] = Counter()  # files, records, bytes, dead_letters, adopted: since start

    @classmethod
    def from_settings(cls, settings: Settings) -> S3Sink:
        """A sink on the configured bucket; :class:`SinkMisconfigured` now when it cannot use the bucket."""
        client = s3.client(settings.s3, timeout_s=S3_TIMEOUT_S, retries=S3_ATTEMPTS)
        store = ArchiveStore(
            client,
            settings.sink_bucket,
            multipart_threshold_bytes=settings.sink.multipart_threshold_bytes,
            part_bytes=settings.sink.multipart_part_bytes,
        )
        store.check()
        return cls(settings, build_sinks(settings), store)

    def stop(self) -> None:
        self.stopping.set()

    def close(self) -> None:
        """Nothing to release: each session closes its clients when it ends."""

    def run(self) -> None:
        """Sessions until stopped; a permanent S3 problem ends the service with one error line."""
        delay_s = FIRST_RETRY_S
        prepared = False
        while not self.stopping.is_set():
            try:
                if not prepared:  # Kafka may still be starting: inside the loop, retried like the rest
                    prepare_data_plane(self.settings)
                    self.store.abort_stale_uploads(self.layout.prefix, STALE_UPLOAD_AGE)
                    prepared = True
                self._session()
                delay_s = FIRST_RETRY_S
                continue
            except StartOver:
                continue
            except SinkMisconfigured as error:
                log.error("s3-sink: %s", error)
                return  # the process exits with status 1: a supervisor restarting it would not help
            except SinkUnavailable as error:
                log.warning(
                    "s3-sink: %s; nothing committed, resuming from the committed offsets in %.0f s",
                    error,
                    delay_s,
                )
            except Exception as error:
                if not clients.is_outage(error):
                    log.exception("s3-sink: failure; resuming from the committed offsets in %.0f s", delay_s)
                else:  # a broker restarting: nothing for a person to do, nothing lost
                    log.warning("s3-sink: Kafka unavailable (%s); resuming in %.0f s", error, delay_s)
            self.stopping.wait(delay_s * random.uniform(0.8, 1.2))
            delay_s = min(delay_s * 2, self.settings.sink.retry_max_s)

    def _session(self) -> None:
        max_bytes = raw_page_max_message_bytes(self.settings) + 2 * ENVELOPE_HEADROOM_BYTES
        producer = clients.producer(self.settings.kafka, **{"message.max.bytes": max_bytes})
        consumer = clients.consumer(
            self.settings.kafka, self.settings.sink_group, **{"session.timeout.ms": SESSION_TIMEOUT_MS}
        )
        self.session = Session(
            self.settings,
            self.sinks,
            self.store,
            layout=self.layout,
            consumer=consumer,
            producer=producer,
            stopping=self.stopping,
            stats=self.stats,
        )
        try:
            self.session.run()
        finally:
            clients.close_within(consumer)
            producer.flush(10)
