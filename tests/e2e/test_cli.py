"""The ``dualplane`` command against the session's brokers: JSON output, errors and exit codes."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli
from tests.support.factories import KafkaTopicFactory

pytestmark = pytest.mark.e2e


def test_config_show_masks_secrets_in_json() -> None:
    env = {
        "DUALPLANE_AMQP_URL": "amqp://crawler:hunter2@127.0.0.1:5672/%2F",
        "DUALPLANE_S3_SECRET_ACCESS_KEY": "aws-secret",
    }

    result = run_cli("config", "show", "--json", env=env)

    assert result.exit_code == 0
    shown = result.json()
    assert shown["amqp"]["url"] == "amqp://crawler:***@127.0.0.1:5672/%2F"
    assert shown["s3"]["secret_access_key"] == "***"
    assert "hunter2" not in result.stdout and "aws-secret" not in result.stdout


def test_config_show_table_names_environment_variables() -> None:
    result = run_cli("config", "show")

    assert result.exit_code == 0
    assert "DUALPLANE_KAFKA_BOOTSTRAP_SERVERS" in result.stdout


def test_kafka_tools_run_against_the_configured_cluster(kafka_topics: KafkaTopicFactory) -> None:
    topic = kafka_topics.create("cli-tools", partitions=2)

    listed = run_cli("kafka", "topics", "--list")
    described = run_cli("kafka", "topics", "--describe", "--topic", topic)

    assert listed.exit_code == 0, listed.stderr
    assert topic in listed.stdout.split()
    assert "PartitionCount: 2" in described.stdout


def test_unknown_kafka_tool_is_a_readable_failure() -> None:
    result = run_cli("kafka", "no-such-tool")

    assert result.exit_code == 1
    assert "unknown Kafka tool 'no-such-tool'" in result.stderr
    assert "topics" in result.stderr


def test_usage_error_exits_2() -> None:
    result = run_cli("stack", "sideways")

    assert result.exit_code == 2
