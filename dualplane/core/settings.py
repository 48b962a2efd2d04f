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

import difflib
import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from data_plane.throttle.policy import PolicyConfig, Priority

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


class SchemaRegistrySettings(BaseSettings):
    """Confluent Schema Registry mode (``schemas.serde``); off, single-object encoding, while unset.

    ``url``: ``DUALPLANE_SCHEMA_REGISTRY_URL``, the base URL of a registry speaking the Confluent
    REST API (comma-separated for several). ``basic_auth_user_info``:
    ``DUALPLANE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO``, ``user:password``. ``auto_register``: producers
    register the schema version they write (subject compatibility set to BACKWARD first); ``false``
    for registries where only an administrator registers schemas.
    """

    model_config = _section("SCHEMA_REGISTRY_")

    url: str | None = None
    basic_auth_user_info: SecretStr | None = None
    auto_register: bool = True
    timeout_s: float = Field(default=10.0, gt=0)


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
    """S3-compatible object store used by the sink, the seed source and the claim-check store."""

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
    # Claim check: a body larger than this goes to S3 (content-addressed, DUALPLANE_S3_*) and the
    # raw page on Kafka carries its reference. 512 KiB keeps every raw_page message (body plus
    # envelope) under Kafka's default 1 MiB message limit while still inlining the vast majority of
    # HTML pages; set it to DUALPLANE_LIMIT_MAX_PAGE_BYTES or more to keep every body inline.
    inline_body_max_bytes: int = Field(default=512 * 1024, ge=1024)


class ExtractSettings(BaseSettings):
    """The extractor: which record schema it writes, how it batches transactions, what it will parse."""

    model_config = _section("EXTRACT_")

    schema_version: int | None = Field(default=None, ge=1)  # None: the latest page_record version
    batch_size: int = Field(default=200, ge=1)  # pages per Kafka transaction at most
    follow_nofollow: bool = False
    # Bodies larger than this are dead-lettered ("oversize: ..."), not parsed: extraction takes about
    # 1 s and 35x the body in memory per MiB of HTML, so a 20 MiB page would stall a transaction.
    max_html_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)


class StackSettings(BaseSettings):
    """The embedded local stack: where it keeps data and which Kafka release it runs."""

    model_config = _section("STACK_")

    data_dir: Path = Field(default_factory=_default_data_dir)
    kafka_version: str = "3.9.1"
    kafka_controller_port: int | None = None
    kafka_heap_mb: int = Field(default=768, ge=256)
    rabbitmq_dist_port: int | None = None
    start_timeout_s: float = Field(default=120.0, gt=0)


class ThrottleSettings(BaseSettings):
    """The throttle processor (``data_plane.throttle``) and the politeness tuning shared with fetchers.

    Windows, policy tuning (:class:`~data_plane.throttle.policy.PolicyConfig`, see :meth:`policy`)
    and the processor's own knobs; durations in seconds unless named. Fields left ``None`` take a
    default from other sections (see :attr:`Settings.throttle_app_id` and friends). An unknown
    ``DUALPLANE_THROTTLE_*`` variable is an error, so a typo never silently falls back to a default.
    """

    model_config = _section("THROTTLE_")

    window_size_s: int = Field(default=600, ge=1)
    window_step_s: int = Field(default=60, ge=1)
    threshold: float = 0.05
    min_samples: int = 20
    recovery_min_samples: int = 5
    recover_fraction: float = 0.5
    recovery_s: float = 180.0
    ceiling: int | None = Field(default=None, ge=1)  # None: DUALPLANE_LIMIT_DOMAIN_CONCURRENCY
    base_delay_ms: int | None = Field(default=None, ge=0)  # None: DUALPLANE_LIMIT_DOMAIN_DELAY_MS
    # Also what a fetcher holds a domain back for after a 403 or a challenge page (no Retry-After),
    # and the cap of any local cooldown, Retry-After included.
    cooldown_base_ms: int = 2000
    cooldown_cap_ms: int = 300_000
    jitter: float = 0.25
    pause_ratio: float = 0.5
    pause_windows: int = 2
    pause_s: int = 600
    daily_budget: int = Field(default=0, ge=0)  # requests per UTC day over the worker's domains; 0: none
    budget_fraction: float = 0.8
    probe_backoff_max: int = Field(default=4, ge=0, le=16)  # recovery waits up to recovery_s * 2^this
    low_priority_domains: str = ""  # comma-separated; a domain and its subdomains
    max_lag_s: float = Field(default=600.0, gt=0)  # older events are counted but never acted on
    app_id: str | None = None  # None: <DUALPLANE_KAFKA_GROUP_PREFIX>-throttle
    offset_reset: Literal["latest", "earliest"] = "latest"  # where a new group starts in fetch.events
    # A crashed worker's partitions move after this long; Faust's 60 s default would stall reactions.
    session_timeout_s: float = Field(default=10.0, ge=6, le=300)  # the broker's default bounds
    commit_interval_s: float = Field(default=1.0, gt=0)  # what a crash makes Faust redeliver
    # None: <DUALPLANE_STACK_DATA_DIR>/throttle/snapshot.json; empty: no snapshot.
    snapshot_path: str | None = None
    snapshot_interval_s: float = Field(default=1.0, gt=0)
    web_port: int = Field(default=0, ge=0, lt=65536)  # 0: no web server; else GET /throttle/...
    web_bind: str = "127.0.0.1"

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_variables(cls, data: Any) -> Any:
        prefix = f"{ENV_PREFIX}THROTTLE_"
        known = {f"{prefix}{name.upper()}" for name in cls.model_fields}
        unknown = sorted(
            key for key in os.environ if key.upper().startswith(prefix) and key.upper() not in known
        )
        if unknown:
            guesses = [
                f"{name} (did you mean {close[0]}?)" if close else name
                for name in unknown
                for close in [difflib.get_close_matches(name.upper(), known, n=1)]
            ]
            raise ValueError(
                f"unknown variable(s) {', '.join(guesses)}; `dualplane config show` lists the known ones"
            )
        return data

    @model_validator(mode="after")
    def _consistent(self) -> ThrottleSettings:
        if self.window_size_s < self.window_step_s or self.window_size_s % self.window_step_s:
            raise ValueError(
                "DUALPLANE_THROTTLE_WINDOW_SIZE_S must be a multiple of DUALPLANE_THROTTLE_WINDOW_STEP_S "
                f"(hopping windows), got {self.window_size_s} and {self.window_step_s}"
            )
        self.policy(LimitSettings.model_construct())  # the policy's own checks, P_d and delay as placeholders
        return self

    def policy(self, limits: LimitSettings) -> PolicyConfig:
        """The policy's view: ``ceiling`` and ``base_delay_ms`` default to ``limits``' P_d and delay."""
        return PolicyConfig(
            step_s=float(self.window_step_s),
            threshold=self.threshold,
            min_samples=self.min_samples,
            recovery_min_samples=self.recovery_min_samples,
            recover_fraction=self.recover_fraction,
            recovery_s=self.recovery_s,
            ceiling=self.ceiling if self.ceiling is not None else limits.domain_concurrency,
            base_delay_ms=self.base_delay_ms if self.base_delay_ms is not None else limits.domain_delay_ms,
            cooldown_base_ms=self.cooldown_base_ms,
            cooldown_cap_ms=self.cooldown_cap_ms,
            jitter=self.jitter,
            pause_ratio=self.pause_ratio,
            pause_windows=self.pause_windows,
            pause_s=self.pause_s,
            budget_fraction=self.budget_fraction,
            probe_backoff_max=self.probe_backoff_max,
        )

    @property
    def low_priority(self) -> tuple[str, ...]:
        """``low_priority_domains`` parsed: lowercase, blanks dropped."""
        return tuple(d.strip().lower() for d in self.low_priority_domains.split(",") if d.strip())

    def priority(self, domain: str) -> Priority:
        """``low`` for a listed low-priority domain or any of its subdomains."""
        for listed in self.low_priority:
            if domain == listed or domain.endswith(f".{listed}"):
                return "low"
        return "normal"


class Settings(BaseModel):
    """Everything one dualplane process needs to know, frozen once built."""

    model_config = ConfigDict(frozen=True)

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    topics: TopicSettings = Field(default_factory=TopicSettings)
    schema_registry: SchemaRegistrySettings = Field(default_factory=SchemaRegistrySettings)
    amqp: AmqpSettings = Field(default_factory=AmqpSettings)
    queues: QueueSettings = Field(default_factory=QueueSettings)
    s3: S3Settings = Field(default_factory=S3Settings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    frontier: FrontierSettings = Field(default_factory=FrontierSettings)
    fetch: FetchSettings = Field(default_factory=FetchSettings)
    extract: ExtractSettings = Field(default_factory=ExtractSettings)
    stack: StackSettings = Field(default_factory=StackSettings)
    throttle: ThrottleSettings = Field(default_factory=ThrottleSettings)

    @classmethod
    def from_env(cls) -> Settings:
        """Read every section from ``DUALPLANE_*`` environment variables (the only place we do)."""
        return cls()

    @property
    def frontier_dir(self) -> Path:
        return self.frontier.data_dir or self.stack.data_dir / "frontier"

    @property
    def throttle_app_id(self) -> str:
        """The throttle processor's Faust app id (and consumer group): namespaced with the groups."""
        return self.throttle.app_id or f"{self.kafka.group_prefix}-throttle"

    @property
    def throttle_snapshot_path(self) -> Path | None:
        """Where the processor writes what ``dualplane throttle show`` reads; None: no snapshot."""
        raw = self.throttle.snapshot_path
        if raw is None:
            return self.stack.data_dir / "throttle" / "snapshot.json"
        return Path(raw).expanduser() if raw.strip() else None

    @property
    def throttle_policy(self) -> PolicyConfig:
        """The throttle policy's tuning, with P_d and the base delay defaulting to ``limits``."""
        return self.throttle.policy(self.limits)

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
