"""Object keys and file boundaries: the Kafka Connect S3 sink's convention, decided by the records alone.

A file's key comes from its topic, partition and first offset, zero-padded to ten digits as Kafka Connect
does (``archive/topic=pages.raw/partition=3/pages.raw+3+0000012000.warc.gz``), after optional ``date=``
and ``job=`` levels (``DUALPLANE_SINK_PARTITION_BY``). A file ends when the next record belongs to another
*group* (another record kind, date, job or record-time window) or once it holds ``flush_records`` records
or ``max_file_bytes`` bytes. None of that depends on the clock or on how the records were batched, so
a re-run from the committed offsets cuts exactly the same files under exactly the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from dualplane.connectors.sink.base import Item
from dualplane.core.settings import SinkSettings
from dualplane.core.settings.connectors import PartitionField

Group = tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """Naming and rotation rules from ``DUALPLANE_SINK_*``."""

    prefix: str
    fields: tuple[PartitionField, ...]
    flush_records: int
    max_file_bytes: int
    rotate_interval_ms: int

    @classmethod
    def from_settings(cls, sink: SinkSettings) -> Layout:
        return cls(
            sink.prefix.strip("/"),
            sink.partition_fields,
            sink.flush_records,
            sink.max_file_bytes,
            sink.rotate_interval_ms,
        )

    def group(self, item: Item, record_time_ms: int) -> Group:
        """What every record of one file shares: kind, the configured key levels and time window."""
        window = record_time_ms // self.rotate_interval_ms if self.rotate_interval_ms else 0
        return (item.kind, *self._levels(item, record_time_ms), str(window))

    def full(self, records: int, size_bytes: int) -> bool:
        """True once a file must end after its last record."""
        return records >= self.flush_records or size_bytes >= self.max_file_bytes

    def key(
        self,
        topic: str,
        partition: int,
        first_offset: int,
        *,
        extension: str,
        item: Item,
        record_time_ms: int,
    ) -> str:
        """The object key of a file starting at ``first_offset`` with ``item``."""
        name = f"{topic}+{partition}+{first_offset:010d}.{extension}"
        levels = [self.prefix] if self.prefix else []
        levels += self._levels(item, record_time_ms)
        return "/".join([*levels, f"topic={topic}", f"partition={partition}", name])

    def partition_prefix(self, topic: str, partition: int) -> str:
        """The key prefix of a partition's files when no date or job level is configured."""
        return "/".join(
            [*([self.prefix] if self.prefix else []), f"topic={topic}", f"partition={partition}/"]
        )

    def _levels(self, item: Item, record_time_ms: int) -> list[str]:
        levels = []
        for field in self.fields:
            if field == "date":
                day = datetime.fromtimestamp(record_time_ms / 1000, UTC).date().isoformat()
                levels.append(f"date={day}")
            else:
                levels.append(f"job={quote(item.job_id or 'none', safe='-_.')}")
        return levels
