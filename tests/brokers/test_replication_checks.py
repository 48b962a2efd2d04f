"""``dualplane status``'s replication checks on a single node: no false alarm.

One broker allows replication factor 1 and one quorum member, which is what the single-node stack's
topics and queues have. That the checks fire when a node of a cluster is gone is tested against a
real three-node cluster (tests/docker/test_cluster_node_loss.py).
"""

from __future__ import annotations

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.replication import QuorumReplication, quorum_replication
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.replication import KafkaReplication, kafka_replication
from dualplane.core.settings import KafkaSettings, Settings
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory, KafkaTopicFactory

pytestmark = pytest.mark.integration


def test_a_single_node_raises_no_alarm(
    settings: Settings, control_plane: ControlPlaneFactory, kafka_topics: KafkaTopicFactory
) -> None:
    kafka_topics.create(partitions=3)
    private = control_plane.settings()
    connection = amqp.connect(private.amqp)
    try:
        Topology.declared(private.queues, connection.channel())
    finally:
        connection.close()
    kafka = kafka_replication(settings.kafka)
    assert (kafka.brokers, kafka.wanted, kafka.alarms()) == (1, 1, [])
    rabbitmq = quorum_replication(settings.amqp, private.queues.quorum_members)
    assert (rabbitmq.nodes, rabbitmq.running, rabbitmq.wanted, rabbitmq.alarms()) == (1, 1, 1, [])
    # Asked for three members, a single node still wants one: the count is capped at the nodes.
    assert quorum_replication(settings.amqp, 3).alarms() == []


def test_status_json_shows_the_replication_part_without_alarms(settings: Settings) -> None:
    status = run_cli("status", "--json", env=settings.to_env(), timeout_s=120)
    assert status.exit_code == 0, status.stderr
    replication = status.json()["replication"]
    assert replication["alarms"] == []
    assert replication["kafka"]["brokers"] == 1 and replication["rabbitmq"]["nodes"] == 1


@pytest.mark.unit
def test_min_insync_replicas_is_set_only_above_one() -> None:
    one = KafkaSettings()
    assert clients.replicated(one, {"retention.ms": "1"}) == {"retention.ms": "1"}
    three = KafkaSettings(replication_factor=3, min_insync_replicas=2)
    assert clients.replicated(three, {}) == {"min.insync.replicas": "2"}
    assert clients.replicated(three, {"min.insync.replicas": "3"}) == {"min.insync.replicas": "3"}


@pytest.mark.unit
def test_each_finding_is_one_line_naming_what_is_short() -> None:
    kafka = KafkaReplication(
        brokers=2, under_replicated={"pages.raw": list(range(10))}, low_replication={"records": 1}
    )
    assert kafka.alarms() == [
        "Kafka topic pages.raw: 10 under-replicated partition(s) (0, 1, 2, 3, 4, 5, 6, 7 and 2 more)",
        "Kafka topic records: replication factor 1, below the 2 that 2 brokers allow",
    ]
    rabbitmq = QuorumReplication(nodes=3, running=2, wanted=3, short={"q": {"members": 3, "online": 2}})
    assert rabbitmq.alarms() == [
        "RabbitMQ: 1 of 3 nodes not running",
        "RabbitMQ quorum queue q: 2 of 3 members online (3 members)",
    ]
