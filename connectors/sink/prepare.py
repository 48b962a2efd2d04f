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

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from confluent_kafka import Message

from dualplane.connectors.sink.base import Item, Sink
from dualplane.connectors.sink.exceptions import Unwritable

Outcome = Item | Unwritable
CHUNK_MESSAGES = 16  # a worker takes this many consecutive messages: one future each, not one a message


@dataclass(frozen=True)
class _Raised:
    """What preparing one message raised (other than :class:`Unwritable`), raised again when reached."""

    error: BaseException


class Preparer:
    """Prepares messages of the sinks' topics; those of sinks with ``threaded_prepare`` on ``threads``."""

    def __init__(self, sinks: Mapping[str, Sink], *, threads: int) -> None:
        self.sinks = sinks
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="s3-sink-prepare")

    def prepared(self, messages: list[Message]) -> Iterator[tuple[Message, Outcome]]:
        """Each message with its outcome, in the given order; threaded ones all started at once, in
        chunks of ``CHUNK_MESSAGES`` (a future, its lock and a wake-up per page cost more than the
        hashing of a small page)."""
        chunks = [messages[at : at + CHUNK_MESSAGES] for at in range(0, len(messages), CHUNK_MESSAGES)]
        started: list[Future[list[Outcome | _Raised | None]] | None] = [
            self.pool.submit(self._threaded, chunk) if self._any_threaded(chunk) else None for chunk in chunks
        ]
        for chunk, future in zip(chunks, started, strict=True):
            outcomes = future.result() if future is not None else [None] * len(chunk)
            for message, outcome in zip(chunk, outcomes, strict=True):
                if outcome is None:  # a sink not marked threaded: prepared here, on the session's thread
                    yield message, _outcome(self.sinks[message.topic() or ""], message)
                elif isinstance(outcome, _Raised):
                    raise outcome.error
                else:
                    yield message, outcome

    def _any_threaded(self, chunk: Sequence[Message]) -> bool:
        return any(self.sinks[message.topic() or ""].threaded_prepare for message in chunk)

    def _threaded(self, chunk: Sequence[Message]) -> list[Outcome | _Raised | None]:
        """The outcomes of the chunk's messages whose sink prepares on threads; None for the others."""
        outcomes: list[Outcome | _Raised | None] = []
        for message in chunk:
            sink = self.sinks[message.topic() or ""]
            if not sink.threaded_prepare:
                outcomes.append(None)
                continue
            try:
                outcomes.append(_outcome(sink, message))
            except Exception as error:  # raised again when the session reaches this message
                outcomes.append(_Raised(error))
        return outcomes

    def close(self) -> None:
        """Wait for preparations still running (an abandoned batch) and stop the threads."""
        self.pool.shutdown(wait=True, cancel_futures=True)


def _outcome(sink: Sink, message: Message) -> Outcome:
    try:
        return sink.prepare(message)
    except Unwritable as error:
        return error
