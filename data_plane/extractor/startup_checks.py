"""What an extractor's settings must name that only this stage knows: a record schema version it can
write, and plugins that are installed here.

``DUALPLANE_EXTRACT_SCHEMA_VERSION=99`` or a domain map naming a plugin that is not installed used to
start an extractor that dead-lettered every page it was given (#34); ``dualplane run`` and
``dualplane replay`` call :func:`configuration_problems` first and refuse to start, exit code 2.
"""

from __future__ import annotations

from dualplane import schemas
from dualplane.core.settings import ExtractSettings
from dualplane.data_plane.extract.plugins import ENTRY_POINT_GROUP, installed_extractors


def configuration_problems(settings: ExtractSettings) -> list[str]:
    """One line per bad value, naming its variable and what to do; empty when the settings are usable."""
    problems = []
    versions = schemas.default_registry().versions("page_record")
    if settings.schema_version is not None and settings.schema_version not in versions:
        known = ", ".join(str(version) for version in versions)
        problems.append(
            f"DUALPLANE_EXTRACT_SCHEMA_VERSION: {settings.schema_version} is no page_record version "
            f"(versions: {known}); give one of them, or unset it for the latest"
        )
    installed = installed_extractors()
    for domain, name in sorted(settings.extractor_by_domain.items()):
        if name not in installed:
            problems.append(
                f"DUALPLANE_EXTRACT_EXTRACTOR_BY_DOMAIN: {domain!r} names plugin {name!r}, which is not "
                f"installed (installed: {', '.join(sorted(installed)) or 'none'}); pip install the package "
                f"that provides it (entry point group {ENTRY_POINT_GROUP}), or fix the name"
            )
    return problems
