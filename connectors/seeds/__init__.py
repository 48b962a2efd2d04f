"""The seed source stage: start URLs streamed from a local file or ``s3://bucket/key``, gzip or not.

``open_seed_list(location, settings)`` picks the source (:mod:`connectors.seeds.local`,
:mod:`connectors.seeds.s3`) and returns a :class:`~connectors.seeds.lines.SeedList`: iterate it for the
valid URLs, in flat memory, while it counts lines, bytes read and bad lines.
"""

from __future__ import annotations

from dualplane.connectors.seeds.base import SeedSource
from dualplane.connectors.seeds.lines import BadLine, SeedList
from dualplane.connectors.seeds.local import LocalSeedSource
from dualplane.connectors.seeds.s3 import S3SeedSource
from dualplane.core.settings import Settings

__all__ = [
    "BadLine",
    "LocalSeedSource",
    "S3SeedSource",
    "SeedList",
    "SeedSource",
    "open_seed_list",
    "source_for",
]


def source_for(location: str, settings: Settings) -> SeedSource:
    """The source ``location`` names: ``s3://bucket/key`` on the configured S3 endpoint, else a local path."""
    if location.startswith("s3://"):
        return S3SeedSource.from_uri(location, settings.s3)
    return LocalSeedSource(location)


def open_seed_list(location: str, settings: Settings) -> SeedList:
    """A :class:`SeedList` over ``location``; nothing is read until it is iterated."""
    return SeedList(source_for(location, settings), settings.seeds)
