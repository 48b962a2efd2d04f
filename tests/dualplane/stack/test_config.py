"""Pure parts of the local stack: endpoint rules, generated configs, state file, tool commands."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from dualplane.core.settings import AmqpSettings, KafkaSettings, Settings, StackSettings
from dualplane.stack.base import Endpoint
from dualplane.stack.exceptions import StackError
from dualplane.stack.kafka import KafkaBroker, _kafka_uuid
from dualplane.stack.kafka_tools import java_security_properties, tool_command
from dualplane.stack.process import start_ticks
from dualplane.stack.rabbitmq import RabbitMQNode
from dualplane.stack.state import StackState, StartedService

pytestmark = pytest.mark.unit


def _settings(tmp_path: Path, **kafka: object) -> Settings:
    # The brokers' defaults, not this shell's DUALPLANE_* (a test run may use other ports).
    return Settings(
        kafka=KafkaSettings(**{"bootstrap_servers": "127.0.0.1:9092", **kafka}),  # type: ignore[arg-type]
        amqp=AmqpSettings(
            url=SecretStr("amqp://guest:guest@127.0.0.1:5672/%2F"), management_url="http://127.0.0.1:15672"
        ),
        stack=StackSettings(data_dir=tmp_path),
    )


def test_endpoint_accepts_loopback_urls_and_host_ports() -> None:
    assert Endpoint.parse("amqp://u:p@localhost:5673/%2F", 5672, "X") == Endpoint("127.0.0.1", 5673)
    assert Endpoint.parse("127.0.0.1:19092", 9092, "X") == Endpoint("127.0.0.1", 19092)


def test_endpoint_refuses_remote_hosts_naming_the_setting() -> None:
    with pytest.raises(StackError, match="DUALPLANE_KAFKA_BOOTSTRAP_SERVERS"):
        Endpoint.parse("kafka.prod:9092", 9092, "DUALPLANE_KAFKA_BOOTSTRAP_SERVERS")


def test_kafka_config_follows_the_client_settings(tmp_path: Path) -> None:
    broker = KafkaBroker(_settings(tmp_path, bootstrap_servers="127.0.0.1:19092"))

    broker._write_config()
    properties = dict(line.split("=", 1) for line in broker.config_path.read_text().splitlines() if line)

    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert properties["process.roles"] == "broker,controller"
    assert properties["log.dirs"] == str(tmp_path / "kafka" / "data")


def test_local_kafka_refuses_a_secured_protocol(tmp_path: Path) -> None:
    broker = KafkaBroker(_settings(tmp_path, security_protocol="SASL_SSL"))

    with pytest.raises(StackError, match="PLAINTEXT only"):
        broker.check_prerequisites()


def test_rabbitmq_node_keeps_everything_under_the_data_dir(tmp_path: Path) -> None:
    node = RabbitMQNode(_settings(tmp_path))

    environment = node._environment()

    assert environment["RABBITMQ_NODENAME"] == "dualplane-5672@localhost"
    for key in ("RABBITMQ_MNESIA_BASE", "RABBITMQ_LOG_BASE", "RABBITMQ_CONFIG_FILE"):
        assert environment[key].startswith(str(tmp_path))


def test_state_records_and_forgets_started_services(tmp_path: Path) -> None:
    state = StackState(tmp_path)

    state.record("kafka", StartedService(pid=123, started_at=1.5))
    state.record("s3", StartedService(pid=456, started_at=2.5))
    state.forget("kafka")

    assert state.load() == {"s3": StartedService(pid=456, started_at=2.5)}


def test_tool_command_adds_bootstrap_servers_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, bootstrap_servers="127.0.0.1:19092")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cached = tmp_path / "dualplane" / "kafka-3.9.1"
    cached.mkdir(parents=True)
    (cached / ".complete").write_text("3.9.1")  # pretend the jars are fetched

    added = tool_command(settings, "topics", ["--list"], None)
    given = tool_command(settings, "topics", ["--bootstrap-server", "x:1", "--list"], None)

    assert added[-3:] == ["--bootstrap-server", "127.0.0.1:19092", "--list"]
    assert given.count("--bootstrap-server") == 1


def test_java_security_properties_translate_sasl(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_username="u",
        sasl_password="p",
        ssl_ca_location="/ca.pem",
    )

    properties = java_security_properties(settings)

    assert properties["security.protocol"] == "SASL_SSL"
    assert 'username="u" password="p"' in properties["sasl.jaas.config"]
    assert properties["ssl.truststore.type"] == "PEM"


def test_a_recycled_pid_is_not_taken_for_our_service() -> None:
    ours = StartedService(pid=os.getpid(), started_at=0.0, start_ticks=start_ticks(os.getpid()))
    stranger = StartedService(pid=os.getpid(), started_at=0.0, start_ticks=1)

    assert ours.running()
    assert not stranger.running()


def test_kafka_cluster_ids_never_start_with_a_dash_so_the_storage_tool_takes_them_as_values() -> None:
    ids = [_kafka_uuid() for _ in range(2000)]
    assert not [cluster_id for cluster_id in ids if cluster_id.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(cluster_id + "==")) == 16 for cluster_id in ids)
