"""The settings object: environment parsing, immutability, client configs and masking."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from dualplane.cli.main import configuration_problem
from dualplane.core.settings import KafkaSettings, LimitSettings, Settings, env_names, mask_url_password

pytestmark = pytest.mark.unit


def test_reads_each_section_from_its_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALPLANE_KAFKA_BOOTSTRAP_SERVERS", "k1:9092,k2:9092")
    monkeypatch.setenv("DUALPLANE_S3_BUCKET", "crawl-archive")
    monkeypatch.setenv("DUALPLANE_LIMIT_DOMAIN_CONCURRENCY", "4")

    settings = Settings.from_env()

    assert settings.kafka.bootstrap_servers == "k1:9092,k2:9092"
    assert settings.s3.bucket == "crawl-archive"
    assert settings.limits.domain_concurrency == 4


def test_invalid_values_are_rejected_with_the_field_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALPLANE_LIMIT_DOMAIN_CONCURRENCY", "0")

    with pytest.raises(ValidationError, match="domain_concurrency"):
        Settings.from_env()


def test_settings_are_frozen() -> None:
    settings = Settings.from_env()

    with pytest.raises(ValidationError):
        settings.kafka.bootstrap_servers = "elsewhere:9092"  # type: ignore[misc]


def test_plaintext_client_config_has_no_security_keys() -> None:
    config = KafkaSettings(bootstrap_servers="b:9092").client_config()

    assert config == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "plaintext",
        "client.id": "dualplane",
    }


def test_sasl_ssl_options_pass_through_to_librdkafka() -> None:
    kafka = KafkaSettings(
        bootstrap_servers="b:9093",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="crawler",
        sasl_password="s3cret",  # type: ignore[arg-type]
        ssl_ca_location="/etc/ssl/ca.pem",  # type: ignore[arg-type]
    )

    config = kafka.client_config()

    assert config["security.protocol"] == "sasl_ssl"
    assert config["sasl.mechanism"] == "SCRAM-SHA-512"
    assert config["sasl.username"] == "crawler"
    assert config["sasl.password"] == "s3cret"
    assert config["ssl.ca.location"] == "/etc/ssl/ca.pem"


def test_masked_view_hides_every_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALPLANE_AMQP_URL", "amqp://crawler:hunter2@mq.internal:5672/crawl")
    monkeypatch.setenv("DUALPLANE_KAFKA_SASL_PASSWORD", "kafka-secret")
    monkeypatch.setenv("DUALPLANE_S3_SECRET_ACCESS_KEY", "aws-secret")

    masked = Settings.from_env().masked()

    assert masked["amqp"]["url"] == "amqp://crawler:***@mq.internal:5672/crawl"
    assert masked["kafka"]["sasl_password"] == "***"
    assert masked["s3"]["secret_access_key"] == "***"
    assert "hunter2" not in repr(masked) and "kafka-secret" not in repr(masked)


def test_url_without_password_is_left_alone() -> None:
    assert mask_url_password("http://127.0.0.1:15672") == "http://127.0.0.1:15672"


def test_env_names_cover_every_field() -> None:
    names = env_names()

    assert "DUALPLANE_KAFKA_BOOTSTRAP_SERVERS" in names
    assert "DUALPLANE_AMQP_URL" in names
    assert "DUALPLANE_S3_ENDPOINT_URL" in names
    assert "DUALPLANE_STACK_DATA_DIR" in names
    assert all(name.startswith("DUALPLANE_") and name.isupper() for name in names)


def test_to_env_round_trips_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALPLANE_AMQP_URL", "amqp://u:secret@127.0.0.1:5999/%2F")
    monkeypatch.setenv("DUALPLANE_QUEUE_DISCOVERY", "custom.discovery")
    original = Settings.from_env()
    for name in list(os.environ):
        if name.startswith("DUALPLANE_"):
            monkeypatch.delenv(name)

    for name, value in original.to_env().items():
        monkeypatch.setenv(name, value)

    assert Settings.from_env() == original


def test_a_bad_value_is_reported_as_the_variable_to_fix() -> None:
    with pytest.raises(ValidationError) as caught:
        LimitSettings(domain_concurrency=0)
    problem = configuration_problem(caught.value)
    assert problem.startswith("invalid configuration: DUALPLANE_LIMIT_DOMAIN_CONCURRENCY: ")
    assert "greater than or equal to 1" in problem
    assert "config show" in problem
