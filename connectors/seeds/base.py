"""What a seed source is: somewhere a byte stream of seed lines comes from."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import BinaryIO


class SeedSource(ABC):
    """One seed list's bytes, opened as a stream (gzip or not: :class:`~connectors.seeds.lines.SeedList`
    looks at the first bytes, so sources never decompress)."""

    location: str

    @abstractmethod
    def open(self) -> tuple[BinaryIO, int | None]:
        """A fresh stream from the first byte, and the total size in bytes when known (for progress).

        Raises :class:`~connectors.seeds.exceptions.SeedListError` with a readable reason when the list
        cannot be opened. The caller closes the stream; ``open`` may be called again for another pass.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"
