"""The one typed settings object: every process reads its ``DUALPLANE_*`` environment here.

Each section is its own ``BaseSettings`` with its own prefix, so the environment names read
naturally (``DUALPLANE_KAFKA_BOOTSTRAP_SERVERS``) while code reads ``settings.kafka.bootstrap_servers``.
Build it once per process with :meth:`Settings.from_env` and pass it down; tests build their own
with :meth:`Settings.model_copy` and never touch the environment.

The local stack (``dualplane stack``) serves exactly the endpoints configured here, so there is
one source of truth for ports: point ``DUALPLANE_KAFKA_BOOTSTRAP_SERVERS`` at ``127.0.0.1:19092``
and both the broker and every client move there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "DUALPLANE_"
MASK = "***"


def _section(prefix: str) -> SettingsConfigDict:
    return SettingsConfigDict(env_prefix=f"{ENV_PREFIX}{prefix}", frozen=True, extra="ignore")


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "dualplane"


class KafkaSettings(BaseSettings):
    """Data-plane broker. Security options are handed to every Kafka client unchanged."""

    model_config = _section("KAFKA_")

    bootstrap_servers: str = "127.0.0.1:9092"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: Path | None = None
    ssl_certificate_location: Path | None = None
    ssl_key_location: Path | None = None
    ssl_key_password: SecretStr | None = None
    client_id: str = "dualplane"
    replication_factor: int = Field(default=1, ge=1)
    group_prefix: str = "dualplane"  # consumer groups are named <prefix>-<service>

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


class TopicSettings(BaseSettings):
    """Kafka topic names of the data plane."""

    model_config = _section("TOPIC_")

    pages_raw: str = "pages.raw"
    fetch_events: str = "fetch.events"
    records: str = "records"
    dead_letters: str = "dead-letters"
    schemas: str = "_dualplane.schemas"
    throttle_state: str = "throttle.state"
    partitions: int = Field(default=6, ge=1)
    # Raw pages are the replay source: keep them long (default 30 days).
    pages_raw_retention_ms: int = Field(default=30 * 86_400_000, ge=-1)


class AmqpSettings(BaseSettings):
    """Control-plane broker: the AMQP URL (credentials inside) and the management API."""

    model_config = _section("AMQP_")

    url: SecretStr = SecretStr("amqp://guest:guest@127.0.0.1:5672/%2F")
    management_url: str = "http://127.0.0.1:15672"
    heartbeat_s: int = Field(default=30, ge=0)
    connection_attempts: int = Field(default=3, ge=1)


class QueueSettings(BaseSettings):
    """RabbitMQ names and queue policies of the control plane."""

    model_config = _section("QUEUE_")

    discovery: str = "dualplane.discovery"
    crawl_tasks: str = "dualplane.tasks"
    dead_letters: str = "dualplane.dead"
    throttle_exchange: str = "dualplane.throttle"
    reports: str = "dualplane.reports"
    retry_prefix: str = "dualplane.retry"
    permits_prefix: str = "dualplane.permits"
    jobs_prefix: str = "dualplane.jobs"
    # name=milliseconds pairs; a retry goes to the shortest tier at least as long as its delay.
    retry_tiers: str = "5s=5000,30s=30000,2m=120000,10m=600000"
    # The broker's safety net: a message redelivered this often (crash loops) is dead-lettered.
    delivery_limit: int = Field(default=10, ge=2)
    # A handler that raises this many times on one message sends it to the dead letters.
    handler_max_failures: int = Field(default=3, ge=1)

    def tiers(self) -> tuple[tuple[str, int], ...]:
        """``retry_tiers`` parsed and sorted by duration: ``(("5s", 5000), ...)``."""
        pairs = [item.split("=", 1) for item in self.retry_tiers.split(",") if item.strip()]
        return tuple(sorted(((name.strip(), int(ms)) for name, ms in pairs), key=lambda tier: tier[1]))


class S3Settings(BaseSettings):
    """S3-compatible object store used by the sink and the seed source."""

    model_config = _section("S3_")

    endpoint_url: str | None = "http://127.0.0.1:9000"
    region: str = "us-east-1"
    access_key_id: SecretStr = SecretStr("dualplane")
    secret_access_key: SecretStr = SecretStr("dualplane-secret")
    bucket: str = "dualplane"


class LimitSettings(BaseSettings):
    """Sizes and concurrency ceilings shared by the services."""

    model_config = _section("LIMIT_")

    max_page_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)
    fetch_concurrency: int = Field(default=64, ge=1)
    domain_concurrency: int = Field(default=2, ge=1)
    domain_delay_ms: int = Field(default=1000, ge=0)


class FrontierSettings(BaseSettings):
    """The frontier: dedup storage, admission caps and robots.txt handling."""

    model_config = _section("FRONTIER_")

    data_dir: Path | None = None  # default: DUALPLANE_STACK_DATA_DIR/frontier
    # Per-domain admission: at most k x P_d tasks outstanding per domain; the rest wait in a backlog.
    outstanding_per_slot: int = Field(default=8, ge=1)
    # Global backpressure: past this many outstanding tasks the frontier stops consuming discovery.
    max_outstanding: int = Field(default=10_000, ge=1)
    seen_exact_limit: int = Field(default=1_000_000, ge=0)
    seen_expected_items: int = Field(default=50_000_000, ge=1000)
    seen_false_positive_rate: float = Field(default=0.001, gt=0, lt=0.5)
    tracking_params: str = ""  # comma-separated extra query parameters to strip
    robots_ttl_s: float = Field(default=86_400, gt=0)
    max_attempts: int = Field(default=5, ge=1)
    snapshot_interval_s: float = Field(default=1.0, gt=0)


class FetchSettings(BaseSettings):
    """The fetch side of the control contract: capacity, politeness and identity."""

    model_config = _section("FETCH_")

    user_agent: str = "dualplane/0.1 (+https://example.invalid/dualplane)"
    # Extra delay on top of DUALPLANE_LIMIT_DOMAIN_DELAY_MS, as a fraction: 0.5 = up to +50%.
    delay_jitter: float = Field(default=0.5, ge=0, le=2)
    permit_wait_s: float = Field(default=2.0, ge=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    read_timeout_s: float = Field(default=30.0, gt=0)
    # Loopback and private addresses are refused unless listed here (tests, the demo).
    allow_hosts: str = ""
    # 0: a 3xx is recorded and its target goes back through the frontier (deduplicated, so every
    # page is fetched once per job). >0: follow inline, recording the chain (may refetch targets).
    max_redirects: int = Field(default=0, ge=0)
    backend: Literal["direct", "scraping_api"] = "direct"
    scraping_api_url: str = "https://api.scrapingant.com/v2/general"
    scraping_api_key: SecretStr | None = None
    scraping_api_render_js: bool = False
    proxies: str = ""  # comma-separated proxy URLs, rotated; banned ones are quarantined


class ExtractSettings(BaseSettings):
    """The extractor: which record schema it writes and how it batches transactions."""

    model_config = _section("EXTRACT_")

    schema_version: int | None = Field(default=None, ge=1)  # None: the latest page_record version
    batch_size: int = Field(default=200, ge=1)  # pages per Kafka transaction at most
    follow_nofollow: bool = False


class StackSettings(BaseSettings):
    """The embedded local stack: where it keeps data and which Kafka release it runs."""

    model_config = _section("STACK_")

    data_dir: Path = Field(default_factory=_default_data_dir)
    kafka_version: str = "3.9.1"
    kafka_controller_port: int | None = None
    kafka_heap_mb: int = Field(default=768, ge=256)
    rabbitmq_dist_port: int | None = None
    start_timeout_s: float = Field(default=120.0, gt=0)


class Settings(BaseModel):
    """Everything one dualplane process needs to know, frozen once built."""

    model_config = ConfigDict(frozen=True)

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    topics: TopicSettings = Field(default_factory=TopicSettings)
    amqp: AmqpSettings = Field(default_factory=AmqpSettings)
    queues: QueueSettings = Field(default_factory=QueueSettings)
    s3: S3Settings = Field(default_factory=S3Settings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    frontier: FrontierSettings = Field(default_factory=FrontierSettings)
    fetch: FetchSettings = Field(default_factory=FetchSettings)
    extract: ExtractSettings = Field(default_factory=ExtractSettings)
    stack: StackSettings = Field(default_factory=StackSettings)

    @classmethod
    def from_env(cls) -> Settings:
        """Read every section from ``DUALPLANE_*`` environment variables (the only place we do)."""
        return cls()

    @property
    def frontier_dir(self) -> Path:
        return self.frontier.data_dir or self.stack.data_dir / "frontier"

    def with_private_names(self, prefix: str, data_dir: Path) -> Settings:
        """A copy whose every queue, exchange, topic and consumer group starts with ``prefix`` and
        whose frontier keeps its state in ``data_dir``: for tests and benchmarks that share brokers."""
        queues = QueueSettings(
            discovery=f"{prefix}.discovery",
            crawl_tasks=f"{prefix}.tasks",
            dead_letters=f"{prefix}.dead",
            throttle_exchange=f"{prefix}.throttle",
            reports=f"{prefix}.reports",
            retry_prefix=f"{prefix}.retry",
            permits_prefix=f"{prefix}.permits",
            jobs_prefix=f"{prefix}.jobs",
        )
        topics = self.topics.model_copy(
            update={
                name: f"{prefix}.{getattr(self.topics, name)}"
                for name in (
                    "pages_raw",
                    "fetch_events",
                    "records",
                    "dead_letters",
                    "schemas",
                    "throttle_state",
                )
            }
        )
        return self.model_copy(
            update={
                "queues": queues,
                "topics": topics,
                "kafka": self.kafka.model_copy(update={"group_prefix": prefix}),
                "frontier": self.frontier.model_copy(update={"data_dir": data_dir}),
            }
        )

    def to_env(self) -> dict[str, str]:
        """These settings as ``DUALPLANE_*`` variables (secrets included), to hand to a child process."""
        env: dict[str, str] = {}
        for section_name in type(self).model_fields:
            section = getattr(self, section_name)
            prefix = type(section).model_config.get("env_prefix", "")
            for name, value in section:
                if value is None:
                    continue
                raw = value.get_secret_value() if isinstance(value, SecretStr) else value
                env[f"{prefix}{name}".upper()] = str(raw).lower() if isinstance(raw, bool) else str(raw)
        return env

    def masked(self) -> dict[str, dict[str, Any]]:
        """The effective settings as plain data with every secret, and URL passwords, masked."""
        return {name: _masked_section(getattr(self, name)) for name in type(self).model_fields}


def env_names() -> set[str]:
    """Every environment variable the settings object reads, e.g. ``DUALPLANE_S3_BUCKET``."""
    names: set[str] = set()
    for field in Settings.model_fields.values():
        section = field.default_factory
        assert isinstance(section, type) and issubclass(section, BaseSettings)
        prefix = section.model_config.get("env_prefix", "")
        names.update(f"{prefix}{name}".upper() for name in section.model_fields)
    return names


def _masked_section(section: BaseSettings) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for name, value in section:
        if isinstance(value, SecretStr):
            raw = value.get_secret_value()
            shown[name] = mask_url_password(raw) if "://" in raw else MASK
        elif isinstance(value, Path):
            shown[name] = str(value)
        elif isinstance(value, str) and "://" in value:
            shown[name] = mask_url_password(value)
        else:
            shown[name] = value
    return shown


def mask_url_password(url: str) -> str:
    """``amqp://user:secret@host/`` -> ``amqp://user:***@host/``; URLs without one are unchanged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:{MASK}@{parts.hostname}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
