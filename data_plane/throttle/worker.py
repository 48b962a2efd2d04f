"""The processor's Faust entry point: ``python -m faust -A data_plane.throttle.worker --datadir D worker``.

Reads ``DUALPLANE_*`` (brokers, topic and exchange names, ``DUALPLANE_LIMIT_DOMAIN_*`` defaults) and
``DUALPLANE_THROTTLE_*`` (:class:`core.settings.ThrottleSettings`) once, at import.
"""

from __future__ import annotations

from dualplane.core.settings import Settings
from dualplane.data_plane.throttle.app import build_app
from dualplane.schemas.serde import install

settings = Settings.from_env()
install(settings)  # fetch events written in Schema Registry mode decode too (DUALPLANE_SCHEMA_REGISTRY_URL)
app = build_app(settings, settings.throttle)
