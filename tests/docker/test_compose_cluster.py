"""Structural checks of docker/compose.cluster.yaml as Docker Compose merges it (no engine needed):
three Kafka nodes of one KRaft cluster, three RabbitMQ nodes of one cluster, and app services that
know every node and replicate everything they create."""

from __future__ import annotations

from typing import Any

import pytest

from dualplane.core.settings import Settings, env_names
from tests.docker.test_compose import APP_SERVICE_NAMES, _compose_config

pytestmark = pytest.mark.unit

CLUSTER_FILES = ("docker/compose.yaml", "docker/compose.local.yaml", "docker/compose.cluster.yaml")
KAFKA_NODES = ("kafka", "kafka-2", "kafka-3")
RABBITMQ_NODES = ("rabbitmq", "rabbitmq-2", "rabbitmq-3")


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = _compose_config(*CLUSTER_FILES)["services"]
    return merged


def test_the_app_services_know_every_node_and_replicate_what_they_create(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in APP_SERVICE_NAMES:
        environment = services[name]["environment"]
        assert {var for var in environment if var.startswith("DUALPLANE_")} <= env_names(), name
        with monkeypatch.context() as patch:
            for var, value in environment.items():
                patch.setenv(var, str(value))
            settings = Settings.from_env()
        assert settings.kafka.bootstrap_servers.split(",") == [f"{node}:9092" for node in KAFKA_NODES]
        assert (settings.kafka.replication_factor, settings.kafka.min_insync_replicas) == (3, 2)
        assert [url.split("@")[1].split(":")[0] for url in settings.amqp.urls()] == list(RABBITMQ_NODES)
        assert len(settings.amqp.management_urls()) == 3 and settings.queues.quorum_members == 3
        depends = services[name]["depends_on"]
        for node in (*KAFKA_NODES, *RABBITMQ_NODES):
            assert depends[node]["condition"] == "service_healthy", (name, node)


def test_three_kafka_nodes_of_one_cluster_replicate_kafkas_own_topics_too(
    services: dict[str, dict[str, Any]],
) -> None:
    nodes = [services[node]["environment"] for node in KAFKA_NODES]
    assert len({env["CLUSTER_ID"] for env in nodes}) == 1
    assert sorted(str(env["KAFKA_NODE_ID"]) for env in nodes) == ["1", "2", "3"]
    for env in nodes:
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093,2@kafka-2:9093,3@kafka-3:9093"
        wanted = {
            "OFFSETS_TOPIC_REPLICATION_FACTOR": "3",
            "TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "3",
            "TRANSACTION_STATE_LOG_MIN_ISR": "2",
            "DEFAULT_REPLICATION_FACTOR": "3",
            "MIN_INSYNC_REPLICAS": "2",
        }
        assert {key: str(env[f"KAFKA_{key}"]) for key in wanted} == wanted
        assert env["KAFKA_ADVERTISED_LISTENERS"].startswith("PLAINTEXT://kafka")


def test_three_rabbitmq_nodes_share_a_cookie_and_join_in_turn(services: dict[str, dict[str, Any]]) -> None:
    peers = "{['rabbit@rabbitmq','rabbit@rabbitmq-2','rabbit@rabbitmq-3'],disc}"
    for node in RABBITMQ_NODES:
        env = services[node]["environment"]
        assert env["RABBITMQ_ERLANG_COOKIE"] == "dualplane-cluster-cookie", node
        joins = f"-rabbit cluster_nodes {peers}" in env["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"]
        # The seed forms the cluster alone (seeking the others, which start after it, cost 25 s).
        assert joins == (node != "rabbitmq"), node
    assert services["rabbitmq-2"]["depends_on"]["rabbitmq"]["condition"] == "service_healthy"
    assert services["rabbitmq-3"]["depends_on"]["rabbitmq-2"]["condition"] == "service_healthy"
    assert "kafka-4" not in services and "rabbitmq-4" not in services  # spares wait for their profile


def test_every_broker_node_gives_up_on_a_lost_peers_name_within_a_second(
    services: dict[str, dict[str, Any]],
) -> None:
    # With the resolver's defaults a removed container's name took 20 s to fail on this machine's
    # compose network (1 s and 1 attempt: 2 s, A and AAAA): RabbitMQ's survivors looked the lost
    # node up on each management request, and status timed out for minutes after the loss.
    for name in (*KAFKA_NODES, *RABBITMQ_NODES):
        assert services[name]["dns_opt"] == ["timeout:1", "attempts:1"], name
