"""A consumed batch's items prepared on worker threads, handed to the session in the order consumed.

For WARC, preparing a page is most of the sink's work: decode it, read back a claim-checked body, hash
the body twice and gzip both records (:mod:`connectors.sink.warc`). hashlib and the compressors release
the GIL, so a few threads use the machine's other cores while the session's thread writes, rotates and
commits. The outcome of each message is its :class:`~connectors.sink.base.Item` or the
:class:`~connectors.sink.exceptions.Unwritable` saying why it cannot be archived; anything else a
preparation raised (``SinkUnavailable``...) is raised when the session reaches that message, as if it
had prepared it itself. Files, offsets and commits stay on the session's thread and in consumed order,
so the objects and keys are the same as with one thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

from confluent_kafka import Message

from connectors.sink.base import Item, Sink
from connectors.sink.exceptions import Unwritable

Outcome = Item | Unwritable


class Preparer:
    """Prepares messages of the sinks' topics; those of sinks with ``threaded_prepare`` on ``threads``."""

    def __init__(self, sinks: Mapping[str, Sink], *, threads: int) -> None:
        self.sinks = sinks
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="s3-sink-prepare")

    def prepared(self, messages: list[Message]) -> Iterator[tuple[Message, Outcome]]:
        """Each message with its outcome, in the given order; threaded ones all started at once."""
        started: list[Future[Outcome] | None] = [
            self.pool.submit(_outcome, sink, message) if sink.threaded_prepare else None
            for message, sink in ((m, self.sinks[m.topic() or ""]) for m in messages)
        ]
        for message, future in zip(messages, started, strict=True):
            if future is None:
                yield message, _outcome(self.sinks[message.topic() or ""], message)
            else:
                yield message, future.result()

    def close(self) -> None:
        """Wait for preparations still running (an abandoned batch) and stop the threads."""
        self.pool.shutdown(wait=True, cancel_futures=True)


def _outcome(sink: Sink, message: Message) -> Outcome:
    try:
        return sink.prepare(message)
    except Unwritable as error:
        return error
