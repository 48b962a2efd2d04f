"""The one typed settings object: every process reads its ``DUALPLANE_*`` environment here.

Each section is its own ``BaseSettings`` with its own prefix (``brokers``, ``stages``,
``throttle``), so the environment names read naturally (``DUALPLANE_KAFKA_BOOTSTRAP_SERVERS``) while
code reads ``settings.kafka.bootstrap_servers``. Build it once per process with
:meth:`Settings.from_env` and pass it down, or only the section a component needs; tests build
their own with :meth:`Settings.model_copy` and never touch the environment.

The local stack (``dualplane stack``) serves exactly the endpoints configured here, so there is
one source of truth for ports: point ``DUALPLANE_KAFKA_BOOTSTRAP_SERVERS`` at ``127.0.0.1:19092``
and both the broker and every client move there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings

from dualplane.core.settings.base import ENV_PREFIX, MASK, mask_url_password
from dualplane.core.settings.brokers import (
    AmqpSettings,
    KafkaSettings,
    QueueSettings,
    S3Settings,
    SchemaRegistrySettings,
    TopicSettings,
)
from dualplane.core.settings.connectors import SeedSettings, SinkSettings
from dualplane.core.settings.operations import LogFormat, LogSettings, MetricsSettings
from dualplane.core.settings.stages import (
    ExtractSettings,
    FetchSettings,
    FrontierSettings,
    LimitSettings,
    StackSettings,
)
from dualplane.core.settings.throttle import ThrottleSettings

__all__ = [
    "ENV_PREFIX",
    "AmqpSettings",
    "ExtractSettings",
    "FetchSettings",
    "FrontierSettings",
    "KafkaSettings",
    "LimitSettings",
    "LogFormat",
    "LogSettings",
    "MetricsSettings",
    "QueueSettings",
    "S3Settings",
    "SchemaRegistrySettings",
    "SeedSettings",
    "Settings",
    "SinkSettings",
    "StackSettings",
    "ThrottleSettings",
    "TopicSettings",
    "env_names",
    "mask_url_password",
    "unknown_env_names",
]


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
    sink: SinkSettings = Field(default_factory=SinkSettings)
    seeds: SeedSettings = Field(default_factory=SeedSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @classmethod
    def from_env(cls) -> Settings:
        """Read every section from ``DUALPLANE_*`` environment variables (the only place we do)."""
        return cls()

    @property
    def frontier_dir(self) -> Path:
        return self.frontier.data_dir or self.stack.data_dir / "frontier"

    @property
    def sink_bucket(self) -> str:
        """Where the S3 sink writes: ``DUALPLANE_SINK_BUCKET``, else ``DUALPLANE_S3_BUCKET``."""
        return self.sink.bucket or self.s3.bucket

    @property
    def sink_group(self) -> str:
        """The S3 sink's consumer group: ``<DUALPLANE_KAFKA_GROUP_PREFIX>-s3-sink``."""
        return f"{self.kafka.group_prefix}-s3-sink"

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


# DUALPLANE_* names that are not settings: the test suite's switches, the compose image tag.
# Read elsewhere: the tests, the compose images, the fork server, the CLI's --namespace, scripts/setup.sh.
NOT_SETTINGS_PREFIXES = (
    "DUALPLANE_TEST_", "DUALPLANE_IMAGE", "DUALPLANE_FORKSERVER_", "DUALPLANE_NAMESPACE", "DUALPLANE_SETUP_"
)  # fmt: skip


def unknown_env_names(environ: Mapping[str, str]) -> list[str]:
    """``DUALPLANE_*`` names in ``environ`` that no setting reads (misspelt, or from another version)."""
    known = env_names()
    return sorted(
        name
        for name in environ
        if name.startswith(ENV_PREFIX) and name not in known and not name.startswith(NOT_SETTINGS_PREFIXES)
    )


def _masked_section(section: BaseSettings) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for name, value in section:
        if isinstance(value, SecretStr):
            raw = value.get_secret_value()
            shown[name] = mask_url_password(raw) if "://" in raw else MASK
        elif isinstance(value, Path):
            shown[name] = str(value)
        elif isinstance(value, str) and "://" in value:  # a URL, or a list of them (proxies)
            shown[name] = ",".join(mask_url_password(url) for url in value.split(","))
        else:
            shown[name] = value
    return shown
