"""What every settings section shares: the ``DUALPLANE_`` prefix, frozen sections, bounded durations,
secret masking."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from dualplane.core.settings import checks

ENV_PREFIX = "DUALPLANE_"
MASK = "***"


def section(prefix: str) -> SettingsConfigDict:
    """The config of one section: read ``DUALPLANE_<prefix>*``, frozen, other variables ignored;
    ``inf`` and ``nan`` are no number (a timeout of ``inf`` reached asyncio as a wait for ever)."""
    return SettingsConfigDict(
        env_prefix=f"{ENV_PREFIX}{prefix}", frozen=True, extra="ignore", allow_inf_nan=False
    )


class Section(BaseSettings):
    """Base of every settings section: a duration (a field named ``*_s`` or ``*_ms``) is bounded.

    One rule for every duration, so a new one is bounded without anyone remembering to: beyond
    :data:`checks.MAX_DURATION_S` a value is a typo, and it would fail far from here (SQLite's 64-bit
    integers, ``asyncio``'s timeouts, librdkafka's 32-bit milliseconds).
    """

    @field_validator("*", mode="after")
    @classmethod
    def _bounded_duration(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or ""
        if isinstance(value, int | float) and not isinstance(value, bool):
            if name.endswith("_ms"):
                checks.bounded_duration(value / 1000, unit_s=0.001)
            elif name.endswith("_s"):
                checks.bounded_duration(value, unit_s=1)
        return value


def mask_url_password(url: str) -> str:
    """``amqp://user:secret@host/`` -> ``amqp://user:***@host/``; URLs without one are unchanged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:{MASK}@{parts.hostname}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
