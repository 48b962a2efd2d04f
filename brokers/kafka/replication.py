"""How well the cluster keeps copies of every topic: what ``dualplane status`` checks after a node is lost.

Three findings, from one metadata request (``list_topics`` names each partition's replicas and
in-sync replicas, and the brokers that are up):

- *under-replicated*: a partition with fewer in-sync replicas than replicas (a broker is down or
  behind: the next loss may lose acknowledged writes, or stop them under ``min.insync.replicas``);
- *offline*: a partition without a leader (no copy is up: reads and writes of it stop);
- *replication factor too low*: a topic with fewer replicas than the cluster allows, ``min(3, brokers
  up)``, as on a topic created with replication factor 1 on a cluster. One broker allows 1, so a
  single-node stack never raises it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dualplane.brokers.kafka import clients
from dualplane.core.settings import KafkaSettings

WANTED_REPLICAS = 3  # what a cluster of three or more brokers should keep of every partition


@dataclass
class KafkaReplication:
    """The findings, as JSON-ready lists; ``alarms()`` says each in a line."""

    brokers: int
    under_replicated: dict[str, list[int]] = field(default_factory=dict)  # topic -> partitions
    offline: dict[str, list[int]] = field(default_factory=dict)
    low_replication: dict[str, int] = field(default_factory=dict)  # topic -> its fewest replicas

    @property
    def wanted(self) -> int:
        return min(WANTED_REPLICAS, self.brokers)

    def alarms(self) -> list[str]:
        lines = [
            f"Kafka topic {topic}: {len(parts)} under-replicated partition(s) {_few(parts)}"
            for topic, parts in sorted(self.under_replicated.items())
        ]
        lines += [
            f"Kafka topic {topic}: {len(parts)} partition(s) without a leader {_few(parts)}"
            for topic, parts in sorted(self.offline.items())
        ]
        lines += [
            f"Kafka topic {topic}: replication factor {replicas}, below the {self.wanted} that "
            f"{self.brokers} brokers allow"
            for topic, replicas in sorted(self.low_replication.items())
        ]
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "brokers": self.brokers,
            "wanted_replicas": self.wanted,
            "under_replicated": self.under_replicated,
            "offline": self.offline,
            "low_replication": self.low_replication,
        }


def kafka_replication(kafka: KafkaSettings, *, timeout_s: float = 10.0) -> KafkaReplication:
    """The findings for every topic of the cluster (Kafka's own and Faust's included)."""
    metadata = clients.admin(kafka).list_topics(timeout=timeout_s)
    report = KafkaReplication(brokers=len(metadata.brokers))
    for name, topic in metadata.topics.items():
        if topic.error is not None or not topic.partitions:
            continue
        for number, partition in sorted(topic.partitions.items()):
            if partition.leader < 0:
                report.offline.setdefault(name, []).append(number)
            if len(partition.isrs) < len(partition.replicas):
                report.under_replicated.setdefault(name, []).append(number)
        fewest = min(len(partition.replicas) for partition in topic.partitions.values())
        if fewest < report.wanted:
            report.low_replication[name] = fewest
    return report


def _few(numbers: list[int], shown: int = 8) -> str:
    more = f" and {len(numbers) - shown} more" if len(numbers) > shown else ""
    return f"({', '.join(map(str, numbers[:shown]))}{more})"
