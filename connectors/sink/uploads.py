"""Completed files on their way to S3, uploaded on worker threads while the session builds the next ones.

At most one upload per partition is in flight: the session waits for a partition's previous upload (and
commits its offsets) before it hands over that partition's next file, so at any time at most one object
per partition exists that the committed offset does not cover (see :mod:`connectors.sink.session`).
Uploads of different partitions overlap each other and the building of files; boto3 clients are safe to
share between threads, and the file's spool belongs to its upload until the session settles it.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from dualplane.connectors.sink.spool import OpenFile
from dualplane.connectors.sink.upload import ArchiveStore

Partition = tuple[str, int]


@dataclass(frozen=True)
class Upload:
    """One completed file of ``size_bytes`` being created in S3; ``future`` raises what the create raised."""

    file: OpenFile
    size_bytes: int
    future: Future[None]


class Uploads:
    """The in-flight uploads of one session, one per partition at most, on ``threads`` worker threads."""

    def __init__(self, store: ArchiveStore, *, threads: int) -> None:
        self.store = store
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="s3-sink-upload")
        self.in_flight: dict[Partition, Upload] = {}

    def __contains__(self, partition: Partition) -> bool:
        return partition in self.in_flight

    def __len__(self) -> int:
        return len(self.in_flight)

    def start(self, partition: Partition, file: OpenFile, size_bytes: int) -> None:
        """Begin creating ``file``'s object; the partition's previous upload must have been taken already."""
        assert partition not in self.in_flight, "one upload per partition: take the previous one first"
        future = self.pool.submit(
            self.store.create,
            file.start.key,
            file.spool,
            size_bytes,
            content_type=file.sink.content_type,
            metadata=file.metadata(),
        )
        self.in_flight[partition] = Upload(file, size_bytes, future)

    def finished(self) -> Iterator[Partition]:
        """Partitions whose upload has ended (created, or failed), in the order they were started."""
        return iter([partition for partition, upload in self.in_flight.items() if upload.future.done()])

    def take(self, partition: Partition) -> Upload | None:
        """The partition's upload, once it has ended (waits for it), no longer in flight; None if none."""
        upload = self.in_flight.pop(partition, None)
        if upload is not None:
            upload.future.exception()  # waits; the caller reads the outcome with future.result()
        return upload

    def close(self) -> list[Upload]:
        """Wait for the uploads still running and stop the threads; return the uploads never taken.

        Their objects, if created, are not committed: whoever consumes the partition next adopts them.
        """
        self.pool.shutdown(wait=True)
        left = list(self.in_flight.values())
        self.in_flight.clear()
        return left
