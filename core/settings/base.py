"""What every settings section shares: the ``DUALPLANE_`` prefix, frozen sections, secret masking."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from pydantic_settings import SettingsConfigDict

ENV_PREFIX = "DUALPLANE_"
MASK = "***"


def section(prefix: str) -> SettingsConfigDict:
    """The config of one section: read ``DUALPLANE_<prefix>*``, frozen, other variables ignored."""
    return SettingsConfigDict(env_prefix=f"{ENV_PREFIX}{prefix}", frozen=True, extra="ignore")


def mask_url_password(url: str) -> str:
    """``amqp://user:secret@host/`` -> ``amqp://user:***@host/``; URLs without one are unchanged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:{MASK}@{parts.hostname}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
