"""A partition reassignment that moves every replica off brokers that are gone, for Kafka's own tool.

After a broker is lost for good its partitions keep it in their replica lists, under-replicated,
until they are reassigned. The plan replaces each missing broker by a live one that holds none of
the partition yet, the least loaded first (replicas counted over the whole cluster, as the plan
places them), keeping the live replicas where they are and in their order, so leaders stay put.
It is the JSON ``kafka-reassign-partitions --reassignment-json-file … --execute`` takes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from dualplane.brokers.kafka import clients
from dualplane.core.settings import KafkaSettings


def reassignment_plan(kafka: KafkaSettings, *, timeout_s: float = 10.0) -> dict[str, Any]:
    """The plan for the cluster as it is now; ``partitions`` is empty when no replica is on a lost broker."""
    metadata = clients.admin(kafka).list_topics(timeout=timeout_s)
    replicas = {
        (name, number): list(partition.replicas)
        for name, topic in metadata.topics.items()
        if topic.error is None
        for number, partition in topic.partitions.items()
    }
    return plan(replicas, set(metadata.brokers))


def plan(replicas: dict[tuple[str, int], list[int]], live: set[int]) -> dict[str, Any]:
    """Pure: the moves for ``replicas`` (topic and partition -> broker ids) given the ``live`` brokers.
    A partition keeps a lost broker only when every live broker already holds it."""
    load = Counter(broker for brokers in replicas.values() for broker in brokers if broker in live)
    moves = []
    for (topic, partition), brokers in sorted(replicas.items()):
        if all(broker in live for broker in brokers):
            continue
        placed = list(brokers)
        for index, broker in enumerate(brokers):
            spare = sorted((b for b in live if b not in placed), key=lambda b: (load[b], b))
            if broker in live or not spare:
                continue
            placed[index] = spare[0]
            load[spare[0]] += 1
        if placed != brokers:
            moves.append({"topic": topic, "partition": partition, "replicas": placed})
    return {"version": 1, "partitions": moves}
