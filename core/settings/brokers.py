"""Settings of the brokers and the object store: Kafka, topics, the schema registry, RabbitMQ, S3."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from dualplane.core.settings import checks
from dualplane.core.settings.base import Section, section
from dualplane.core.settings.fields import (
    BootstrapServers,
    BucketName,
    Name,
    http_url,
    http_urls,
    optional_http_url,
)


class KafkaSettings(Section):
    """Data-plane broker. Security options are handed to every Kafka client unchanged."""

    model_config = section("KAFKA_")

    bootstrap_servers: BootstrapServers = "127.0.0.1:9092"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: Path | None = None
    ssl_certificate_location: Path | None = None
    ssl_key_location: Path | None = None
    ssl_key_password: SecretStr | None = None
    client_id: Name = "dualplane"
    # Every topic the platform creates gets these (Faust's changelogs and its own topics included):
    # 1 and 1 fit one broker; a cluster sets 3 and 2, so that a write acknowledged by two brokers
    # survives the loss of any one node for good (docs/multi-machine.md).
    replication_factor: int = Field(default=1, ge=1)
    min_insync_replicas: int = Field(default=1, ge=1)
    group_prefix: Name = "dualplane"  # consumer groups are named <prefix>-<service>

    @model_validator(mode="after")
    def _insync_within_replicas(self) -> KafkaSettings:
        # More in-sync replicas than copies would refuse every acks=all write (NOT_ENOUGH_REPLICAS).
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"DUALPLANE_KAFKA_MIN_INSYNC_REPLICAS ({self.min_insync_replicas}) is above "
                f"DUALPLANE_KAFKA_REPLICATION_FACTOR ({self.replication_factor}): no write could succeed; "
                "use at most the replication factor (a 3-broker cluster: 3 and 2)"
            )
        return self

    def client_config(self) -> dict[str, str]:
        """librdkafka connection and security keys shared by producers, consumers and admins."""
        config = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol.lower(),
            "client.id": self.client_id,
        }
        optional: dict[str, str | Path | SecretStr | None] = {
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password,
            "ssl.ca.location": self.ssl_ca_location,
            "ssl.certificate.location": self.ssl_certificate_location,
            "ssl.key.location": self.ssl_key_location,
            "ssl.key.password": self.ssl_key_password,
        }
        for key, value in optional.items():
            if isinstance(value, SecretStr):
                config[key] = value.get_secret_value()
            elif value is not None:
                config[key] = str(value)
        return config


class SchemaRegistrySettings(Section):
    """Confluent Schema Registry mode (``schemas.serde``); off, single-object encoding, while unset.

    ``url``: ``DUALPLANE_SCHEMA_REGISTRY_URL``, the base URL of a registry speaking the Confluent
    REST API (comma-separated for several). ``basic_auth_user_info``:
    ``DUALPLANE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO``, ``user:password``. ``auto_register``: producers
    register the schema version they write (subject compatibility set to BACKWARD first); ``false``
    for registries where only an administrator registers schemas.
    """

    model_config = section("SCHEMA_REGISTRY_")

    url: Annotated[str | None, http_urls("http://127.0.0.1:8081")] = None
    basic_auth_user_info: SecretStr | None = None
    auto_register: bool = True
    timeout_s: float = Field(default=10.0, gt=0)


class TopicSettings(Section):
    """Kafka topic names of the data plane."""

    model_config = section("TOPIC_")

    pages_raw: str = "pages.raw"
    fetch_events: str = "fetch.events"
    records: str = "records"
    dead_letters: str = "dead-letters"
    schemas: str = "_dualplane.schemas"
    throttle_state: str = "throttle.state"
    profiles: str = "fetch.profiles"  # compacted; one fetch profile per name (`dualplane profile set`)
    frontier_changelog: str = "frontier.changelog"  # compacted; partition i is frontier shard i's state
    job_progress: str = "jobs.progress"  # compacted; partition i holds shard i's latest snapshot per job
    # The (job, URL) keys of the pages the extractor has handled, partitioned like pages.raw and written
    # in its transactions: a page fetched twice (a fetcher died between Kafka's confirm and its ack)
    # yields one record. Compacted, and kept this long: a copy arriving later is extracted again.
    extracted: str = "pages.extracted"
    extracted_retention_ms: int = Field(default=7 * 86_400_000, ge=3_600_000)
    # The latest record per URL (compacted, keyed and partitioned like pages.raw) and the field-level
    # change events between a URL's records, both written in the extractor's transactions.
    records_latest: str = "records.latest"
    changes: str = "records.changes"
    partitions: int = Field(default=6, ge=1)
    # Raw pages are the replay source: keep them long (default 30 days).
    pages_raw_retention_ms: int = Field(default=30 * 86_400_000, ge=-1)

    @field_validator("*", mode="after")
    @classmethod
    def _topic_names(cls, value: object) -> object:
        return checks.topic_name(value) if isinstance(value, str) else value


class AmqpSettings(Section):
    """Control-plane broker: the AMQP URL (credentials inside) and the management API.

    ``fallback_urls`` (``DUALPLANE_AMQP_FALLBACK_URLS``): the other nodes of a RabbitMQ cluster,
    comma-separated; a connection goes to the first of ``url`` and these that answers, so a service
    reconnects to a node that survives. ``fallback_management_urls``: the same for the management API.
    """

    model_config = section("AMQP_")

    url: SecretStr = SecretStr("amqp://guest:guest@127.0.0.1:5672/%2F")
    fallback_urls: SecretStr = SecretStr("")
    management_url: Annotated[str, http_url("http://127.0.0.1:15672")] = "http://127.0.0.1:15672"
    fallback_management_urls: str = ""
    heartbeat_s: int = Field(default=30, ge=0)
    connection_attempts: int = Field(default=3, ge=1)

    @field_validator("url")
    @classmethod
    def _an_amqp_url(cls, url: SecretStr) -> SecretStr:
        # pika raises IndexError deep inside for a value like "notaurl": say what is expected here.
        parts = urlsplit(url.get_secret_value())
        if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
            raise ValueError("expected amqp://user:password@host:port/vhost (vhost / is %2F)")
        return url

    @field_validator("fallback_urls")
    @classmethod
    def _amqp_urls(cls, urls: SecretStr) -> SecretStr:
        for url in _split(urls.get_secret_value()):
            parts = urlsplit(url)
            if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
                raise ValueError("expected amqp://user:password@host:port/vhost,amqp://… (vhost / is %2F)")
        return urls

    @field_validator("fallback_management_urls")
    @classmethod
    def _http_urls(cls, urls: str) -> str:
        for url in _split(urls):
            checks.http_url(url, "http://host:15672")
        return urls

    def urls(self) -> list[str]:
        """Every node's AMQP URL, ``url`` first: the order connections try them in."""
        return [self.url.get_secret_value(), *_split(self.fallback_urls.get_secret_value())]

    def management_urls(self) -> list[str]:
        """Every node's management API, ``management_url`` first."""
        return [self.management_url, *_split(self.fallback_management_urls)]


def _split(urls: str) -> list[str]:
    return [url.strip() for url in urls.split(",") if url.strip()]


class QueueSettings(Section):
    """RabbitMQ names and queue policies of the control plane."""

    model_config = section("QUEUE_")

    discovery: Name = "dualplane.discovery"
    crawl_tasks: Name = "dualplane.tasks"
    dead_letters: Name = "dualplane.dead"
    throttle_exchange: Name = "dualplane.throttle"
    reports: Name = "dualplane.reports"
    retry_prefix: Name = "dualplane.retry"
    permits_prefix: Name = "dualplane.permits"
    # Frontier shards: discovery and reports are routed by site to this many queues, each owned by
    # one active frontier (see core.web.domains). Every process must agree on it.
    frontier_shards: int = Field(default=1, ge=1, le=1024)
    # name=milliseconds pairs; a retry goes to the shortest tier at least as long as its delay.
    retry_tiers: str = "5s=5000,30s=30000,2m=120000,10m=600000"
    # The broker's safety net: a message redelivered this often (crash loops) is dead-lettered.
    delivery_limit: int = Field(default=10, ge=2)
    # A handler that raises this many times on one message sends it to the dead letters.
    handler_max_failures: int = Field(default=3, ge=1)
    # Members of each quorum queue (x-quorum-initial-group-size); 0 sends no argument, and RabbitMQ
    # puts one on every node the cluster has when the queue is declared. A cluster sets 3. The
    # argument is part of a queue's identity: change it only for queues that do not exist yet.
    quorum_members: int = Field(default=0, ge=0)

    @field_validator("retry_tiers")
    @classmethod
    def _tiers_parse(cls, value: str) -> str:
        _parse_tiers(value)  # a bad value fails where the settings are read, naming the variable
        return value

    def tiers(self) -> tuple[tuple[str, int], ...]:
        """``retry_tiers`` parsed and sorted by duration: ``(("5s", 5000), ...)``."""
        return _parse_tiers(self.retry_tiers)


def _parse_tiers(value: str) -> tuple[tuple[str, int], ...]:
    tiers = []
    for item in (item.strip() for item in value.split(",")):
        name, _, ms = item.partition("=")
        if not item:
            continue
        if not name.strip() or not ms.strip().isdigit() or int(ms) <= 0:
            raise ValueError(f"{item!r} is not name=milliseconds; expected e.g. 5s=5000,30s=30000")
        tiers.append((name.strip(), int(ms)))
    if not tiers:
        raise ValueError("no retry tier given; expected e.g. 5s=5000,30s=30000")
    return tuple(sorted(tiers, key=lambda tier: tier[1]))


class S3Settings(Section):
    """S3-compatible object store used by the sink, the seed source and the claim-check store.

    ``claim_check_refresh_s`` (``DUALPLANE_S3_CLAIM_CHECK_REFRESH_S``): a claim-checked body stored this
    long ago is rewritten in place (a server-side copy, which resets its age) when a new raw page refers
    to it, so an age-based lifecycle rule never expires a body a recent page still names. See
    ``connectors.storage.claim_check.lifecycle_rule`` for the rule to set.
    """

    model_config = section("S3_")

    # Unset or empty: the AWS endpoint of the region.
    endpoint_url: Annotated[str | None, optional_http_url("http://127.0.0.1:9000 (empty for AWS)")] = (
        "http://127.0.0.1:9000"
    )
    region: Name = "us-east-1"
    access_key_id: SecretStr = SecretStr("dualplane")
    secret_access_key: SecretStr = SecretStr("dualplane-secret")
    bucket: BucketName = "dualplane"
    claim_check_refresh_s: float = Field(default=86_400.0, ge=0)
