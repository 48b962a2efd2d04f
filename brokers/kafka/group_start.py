"""Pin where a consumer group starts: commit the end of every partition it has no offset for yet.

``auto.offset.reset=latest`` is applied by whichever member first reads a partition without a
committed offset, at the moment it reads it. If that member dies before its first commit, the next
owner applies "latest" again, later, and silently skips every value in between: the first owner
processed them, but nothing made that durable. Committing the end offsets once, before any member
consumes, turns "latest" into a fixed starting point that every later owner resumes from.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException, TopicPartition

from dualplane.brokers.kafka import clients
from dualplane.core.settings import KafkaSettings

log = logging.getLogger(__name__)


def pin_group_start(kafka: KafkaSettings, group_id: str, topic: str, *, timeout_s: float = 30.0) -> int:
    """Commit the current end offset of each partition of ``topic`` where ``group_id`` has none.

    Returns how many partitions were pinned. A group that already has live members refuses the
    commit (they joined before us, so they pinned it): that is logged and is not an error.
    """
    consumer = clients.consumer(kafka, group_id, **{"enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        partitions = [TopicPartition(topic, p) for p in sorted(metadata.partitions)]
        unpinned = [tp for tp in consumer.committed(partitions, timeout=timeout_s) if tp.offset < 0]
        ends = [
            TopicPartition(topic, tp.partition, consumer.get_watermark_offsets(tp, timeout=timeout_s)[1])
            for tp in unpinned
        ]
        if ends:
            consumer.commit(offsets=ends, asynchronous=False)
        return len(ends)
    except KafkaException as error:
        log.info("did not pin the start of group %s on %s (a live member did): %s", group_id, topic, error)
        return 0
    finally:
        clients.close_within(consumer)
