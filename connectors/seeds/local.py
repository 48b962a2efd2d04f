"""Seed lists in a local file."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from dualplane.connectors.seeds.base import SeedSource
from dualplane.connectors.seeds.exceptions import SeedListError


class LocalSeedSource(SeedSource):
    """A file on this machine (``-`` is not supported: a second pass needs to reopen it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.location = str(path)

    def open(self) -> tuple[BinaryIO, int | None]:
        try:
            stream = self.path.open("rb")
        except OSError as error:
            raise SeedListError(f"cannot read seed list {self.location}: {error.strerror}") from error
        return stream, self.path.stat().st_size
