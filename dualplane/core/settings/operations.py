"""Settings for operating the services.

- ``DUALPLANE_LOG_FORMAT``: ``text`` (rich on a terminal, one plain line otherwise) or ``json``
  (one object per line, with ``trace_id``, ``job_id`` and ``domain`` on every line about a page).
"""

from __future__ import annotations

from typing import Literal

from pydantic_settings import BaseSettings

from dualplane.core.settings.base import section

LogFormat = Literal["text", "json"]


class LogSettings(BaseSettings):
    """How services write their logs (``DUALPLANE_LOG_*``)."""

    model_config = section("LOG_")

    format: LogFormat = "text"
