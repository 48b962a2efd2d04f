"""What a sink is: one Kafka topic archived into files of one format, named, rotated and committed by the
service (:mod:`connectors.sink.service`).

A :class:`Sink` says how to turn a consumed message into an :class:`Item` (or why it cannot:
:class:`~connectors.sink.exceptions.Unwritable`) and how to write items into a file
(:class:`SinkFile`). Naming, rotation and commits are the same for every format and live in the
service and :mod:`connectors.sink.layout`, so a new format is one module with one subclass of each.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, BinaryIO

from confluent_kafka import Message


@dataclass(frozen=True)
class Item:
    """A consumed record ready to be written.

    ``kind`` separates what must never share a file (for Avro: the writer schema's fingerprint);
    ``job_id`` feeds the ``job=`` key level; ``payload`` is what the format's :meth:`SinkFile.write` takes.
    """

    kind: str
    job_id: str | None
    payload: Any


@dataclass(frozen=True)
class FileStart:
    """Where a file starts: topic, partition, first offset, its object key and its first record's time."""

    topic: str
    partition: int
    first_offset: int
    key: str
    record_time_ms: int


class SinkFile(ABC):
    """One open file, written to a local stream until the service uploads it."""

    @abstractmethod
    def write(self, item: Item, offset: int) -> None:
        """Append ``item`` (consumed at ``offset``) to the file."""

    @abstractmethod
    def finish(self) -> None:
        """Write whatever the format keeps buffered; the stream then holds the complete file."""


class Sink(ABC):
    """One stream: ``topic`` in, files of one format out."""

    name: str
    """Short name, as in ``DUALPLANE_SINK_STREAMS`` (``warc``, ``avro``)."""
    extension: str
    """File name extension, without the dot (``warc.gz``)."""
    content_type: str
    """The objects' Content-Type."""
    topic: str
    threaded_prepare: bool = False
    """True when :meth:`prepare` is safe to call from several threads and gains from it (it releases the
    GIL for most of its work), so the session prepares a batch on worker threads."""

    @abstractmethod
    def prepare(self, message: Message) -> Item:
        """The item ``message`` holds, decoded and checked.

        :class:`~connectors.sink.exceptions.Unwritable` when this record can never be written (it is
        dead-lettered); :class:`~connectors.sink.exceptions.SinkUnavailable` when something it needs does
        not answer now (nothing is committed; the service retries).
        """

    @abstractmethod
    def open_file(self, stream: BinaryIO, start: FileStart, first: Item) -> SinkFile:
        """A new file writing to ``stream``, which will hold ``first`` and items of the same ``kind``."""
