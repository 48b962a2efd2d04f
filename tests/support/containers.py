"""The ``containers`` back end: Kafka, RabbitMQ, S3 and a schema registry from testcontainers.

The images are the registry-free ones ``scripts/compose-local.sh prepare`` builds (and it starts an
engine when it can): the same Maven jars, Debian packages and moto the embedded stack runs, so the
integration suite proves the same brokers in containers. Ryuk (the reaper) is off: its image lives
in a registry; the session stops its containers itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PREPARE = ROOT / "scripts" / "compose-local.sh"
KAFKA_IMAGE = "dualplane-local/kafka:3.9.1"
RABBITMQ_IMAGE = "dualplane-local/rabbitmq:debian"
S3_IMAGE = "dualplane-local/s3:moto"
REGISTRY_IMAGE = "dualplane-local/schema-registry:rivven"
START_TIMEOUT_S = 120


class ContainersUnavailable(RuntimeError):
    """No engine, or the images could not be prepared; the message says why."""


@dataclass
class Endpoints:
    """Where the containers answer on the host, and how to stop them."""

    kafka: str = ""
    amqp_url: str = ""
    management_url: str = ""
    s3_url: str = ""
    registry_url: str = ""
    stops: list[Callable[[], None]] = field(default_factory=list)


def start_containers() -> Endpoints:
    _prepare()
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from testcontainers.core.container import DockerContainer  # reads the variable at import

    endpoints = Endpoints()
    try:
        kafka_port = _free_port()
        kafka = DockerContainer(KAFKA_IMAGE).with_envs(**_kafka_env(kafka_port))
        endpoints.stops.append(kafka.with_bind_ports(9092, kafka_port).start().stop)
        endpoints.kafka = f"127.0.0.1:{kafka_port}"
        rabbit = DockerContainer(RABBITMQ_IMAGE).with_exposed_ports(5672, 15672).start()
        endpoints.stops.append(rabbit.stop)
        endpoints.amqp_url = f"amqp://guest:guest@127.0.0.1:{rabbit.get_exposed_port(5672)}/%2F"
        endpoints.management_url = f"http://127.0.0.1:{rabbit.get_exposed_port(15672)}"
        s3 = DockerContainer(S3_IMAGE).with_exposed_ports(9000).start()
        endpoints.stops.append(s3.stop)
        endpoints.s3_url = f"http://127.0.0.1:{s3.get_exposed_port(9000)}"
        registry = DockerContainer(REGISTRY_IMAGE).with_exposed_ports(8081).start()
        endpoints.stops.append(registry.stop)
        endpoints.registry_url = f"http://127.0.0.1:{registry.get_exposed_port(8081)}"
    except Exception:
        for stop in reversed(endpoints.stops):
            stop()
        raise
    return endpoints


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise ContainersUnavailable(f"{what} did not answer within {START_TIMEOUT_S} s")
        time.sleep(1)


def _prepare() -> None:
    completed = subprocess.run(
        [str(PREPARE), "prepare"], capture_output=True, text=True, timeout=1800, check=False, cwd=ROOT
    )
    if completed.returncode != 0:
        raise ContainersUnavailable(
            f"DUALPLANE_TEST_BACKEND=containers: {PREPARE.name} prepare failed: "
            f"{completed.stderr.strip()[-2000:]}"
        )


def _free_port() -> int:
    # Kafka must advertise the host port before it starts, so the port is chosen here.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _kafka_env(host_port: int) -> dict[str, str]:
    """One KRaft node as the embedded stack configures it, clients on the host at ``host_port``."""
    return {
        "CLUSTER_ID": "5L6g3nShT-eMCtK--X86sw",
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,BROKER://0.0.0.0:9094,CONTROLLER://0.0.0.0:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{host_port},BROKER://localhost:9094",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
        "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
        "KAFKA_NUM_PARTITIONS": "3",
        "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "10",
        "KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "4",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "true",
        "KAFKA_MESSAGE_MAX_BYTES": str(16 * 1024 * 1024),
    }
