"""Settings for operating the services: metrics endpoints and log format.

- ``DUALPLANE_METRICS_PORT``: the Prometheus endpoint of a ``dualplane run`` process (0: none).
  ``dualplane run --processes N`` gives child ``i`` the port ``DUALPLANE_METRICS_PORT + i`` (one
  registry per process, see ``core.metrics``); the throttle's Faust child has no port of
  its own, its figures are exported by the process that runs it.
- ``DUALPLANE_METRICS_BIND``: the address it listens on (``0.0.0.0`` in containers).
- ``DUALPLANE_METRICS_MAX_DOMAINS``: per-domain series (block ratio, P_d, delay) are limited to
  the domains the throttle acts on or blocks most, this many at most, so a crawl of a million sites
  does not become a million series.
- ``DUALPLANE_LOG_FORMAT``: ``text`` (rich on a terminal, one plain line otherwise) or ``json``
  (one object per line, with ``trace_id``, ``job_id`` and ``domain`` on every line about a page).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dualplane.core.settings.base import Section, section
from dualplane.core.settings.fields import Host

LogFormat = Literal["text", "json"]


class MetricsSettings(Section):
    """The Prometheus endpoint of each service process (``DUALPLANE_METRICS_*``)."""

    model_config = section("METRICS_")

    port: int = Field(default=0, ge=0, le=65535)
    bind: Host = "127.0.0.1"
    max_domains: int = Field(default=50, ge=0)


class LogSettings(Section):
    """How services write their logs (``DUALPLANE_LOG_*``)."""

    model_config = section("LOG_")

    format: LogFormat = "text"
