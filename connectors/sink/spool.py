"""A file being written: a local spool, the format's writer on it, and what it holds so far."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from dualplane.connectors.sink.base import FileStart, Item, Sink, SinkFile
from dualplane.connectors.sink.layout import Group

SPOOL_IN_MEMORY_BYTES = 8 * 1024 * 1024  # files beyond this go to disk: memory stays flat for 256 MiB files


@dataclass
class OpenFile:
    """One partition's open file: items go in until the service completes (uploads) or discards it.

    ``last_offset`` is the last offset the file accounts for, including dead-lettered records after its
    last item, so committing ``last_offset + 1`` after the upload commits exactly what the file covers.
    """

    sink: Sink
    start: FileStart
    group: Group
    spool: IO[bytes]
    writer: SinkFile
    records: int = 0
    last_offset: int = -1
    touched_s: float = field(default_factory=time.monotonic)

    @classmethod
    def open(
        cls, sink: Sink, start: FileStart, group: Group, first: Item, spool_dir: Path | None
    ) -> OpenFile:
        where = str(spool_dir) if spool_dir else None
        spool = tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY_BYTES, dir=where)  # noqa: SIM115 (discard closes it)
        return cls(sink, start, group, spool, sink.open_file(spool, start, first))  # type: ignore[arg-type]

    @property
    def size_bytes(self) -> int:
        return self.spool.tell()

    def write(self, item: Item, offset: int) -> None:
        self.writer.write(item, offset)
        self.records += 1
        self.cover(offset)

    def cover(self, offset: int) -> None:
        """Count ``offset`` as done by this file (written, or dead-lettered while the file was open)."""
        self.last_offset = offset
        self.touched_s = time.monotonic()

    def finish(self) -> int:
        """Complete the file in its spool and return its size in bytes."""
        self.writer.finish()
        self.spool.flush()
        return self.spool.tell()

    def metadata(self) -> dict[str, str]:
        """The object's user metadata: which offsets it holds, so an adopted object says where to go on."""
        return {
            "topic": self.start.topic,
            "partition": str(self.start.partition),
            "first-offset": str(self.start.first_offset),
            "last-offset": str(self.last_offset),
            "records": str(self.records),
        }

    def discard(self) -> None:
        self.spool.close()
