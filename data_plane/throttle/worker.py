"""The processor's Faust entry point: ``python -m faust -A data_plane.throttle.worker --datadir D worker``.

Reads ``DUALPLANE_*`` (brokers, topic and exchange names, ``DUALPLANE_LIMIT_DOMAIN_*`` defaults) and
``DUALPLANE_THROTTLE_*`` (see :mod:`data_plane.throttle.config`) once, at import.
"""

from __future__ import annotations

from data_plane.throttle.app import build_app
from data_plane.throttle.config import ThrottleConfig
from dualplane.settings import Settings

settings = Settings.from_env()
app = build_app(settings, ThrottleConfig.from_env(settings))
