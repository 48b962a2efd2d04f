"""A Faust producer whose ``flush`` really waits, so source offsets never get ahead of table changelogs.

Why
---
Faust commits a worker's source offsets right after ``await app.producer.flush()``
(``faust.transport.consumer.Consumer._commit_offsets``, since faust-streaming#273): the flush is
what makes the table writes of the committed events durable first. Table writes go through the
producer's buffer (``Table.send_changelog`` -> ``Topic.send_soon`` -> ``ProducerBuffer``), and
faust-streaming 0.15's ``ProducerBuffer.flush`` is not a full drain: it returns as soon as no
message leaves the buffer for 0.1 s (``flush_atmost``'s ``wait_for(..., timeout=0.1)``), for instance
while aiokafka makes a send wait for a full batch to drain or the event loop is short of CPU, and the
message it is handing to aiokafka at that moment is in neither the buffer's count nor the batches
aiokafka's flush waits for.
Such writes can still be in memory when the offsets of their events are committed; a crash then
(SIGKILL, OOM, power) loses them for good, since committed events are not read again. Each event
writes ``size / step`` windows, so the buffer is busiest exactly when the processor is.

This was found by reading the code, not observed: in instrumented runs under a CPU hog, Faust's own
flush never returned with a write still owed. The gap is narrow, but it costs only a set of futures
to close (tested in ``tests/data_plane/throttle/test_producer.py``; the SIGKILL-right-after-a-commit test
in ``tests/data_plane/throttle/test_app.py`` guards the behaviour end to end).

:class:`ChangelogSafeProducer` remembers every buffered message; ``flush`` returns only once each
message buffered before the call is acknowledged by Kafka. A failed write makes every later ``flush``
raise :class:`~data_plane.throttle.exceptions.ChangelogWriteFailed`, so offsets are never committed
past a lost update: the commit raises, Faust crashes the worker, and its replacement re-reads the
uncommitted events (the windows skip what they already counted, see :mod:`data_plane.throttle.windows`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import faust
from faust.transport.drivers.aiokafka import Producer as AIOKafkaProducer
from faust.types import FutureMessage, ProducerT

from dualplane.core.settings import LogFormat
from dualplane.data_plane.throttle.exceptions import ChangelogWriteFailed

log = logging.getLogger(__name__)

WARN_AFTER_S = 10.0  # a flush this slow means Kafka is unwell; say so while still waiting


class ChangelogSafeProducer(AIOKafkaProducer):
    """Faust's aiokafka producer; ``flush`` returns when every message sent through its buffer is acked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unacknowledged: set[FutureMessage] = set()
        self.failure: BaseException | None = None

    def send_soon(self, fut: FutureMessage) -> None:
        self.unacknowledged.add(fut)
        fut.add_done_callback(self._on_done)
        super().send_soon(fut)

    def _on_done(self, fut: asyncio.Future[Any]) -> None:
        self.unacknowledged.discard(fut)
        if not fut.cancelled() and fut.exception() is not None and self.failure is None:
            self.failure = fut.exception()

    async def flush(self) -> None:
        """Send everything buffered and wait until Kafka acknowledged each message (see the module doc).

        Only the messages buffered before the call count: the caller (Faust's commit, or the agent
        before it announces a command) depends on those, and the agent keeps producing meanwhile, so
        waiting for every later message too could keep a busy worker from ever committing.
        """
        for hook in getattr(self.app, "flush_hooks", ()):
            hook()  # e.g. the buckets counted since the last flush go into the buffer first
        owed = set(self.unacknowledged)
        await super().flush()
        waited_s = 0.0
        while owed := {fut for fut in owed if not fut.done()}:
            self._raise_if_failed()
            done, _ = await asyncio.wait(owed, timeout=WARN_AFTER_S)
            if not done:
                waited_s += WARN_AFTER_S
                log.warning(
                    "still waiting for Kafka to acknowledge %d table changelog writes after %.0f s; "
                    "offsets are not committed until it does",
                    len(owed),
                    waited_s,
                )
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self.failure is not None:
            raise ChangelogWriteFailed(
                f"a table changelog write failed ({self.failure!r}); refusing to commit offsets past it: "
                "restart the worker, it replays the uncommitted events and recounts what was lost"
            )
        if self.buffer.crashed:
            raise ChangelogWriteFailed(
                f"the producer buffer stopped ({self.buffer.crash_reason!r}) with "
                f"{len(self.unacknowledged)} changelog writes unsent; restart the worker"
            )


class ThrottleApp(faust.App):
    """``faust.App`` with :class:`ChangelogSafeProducer` as its producer (the commit path flushes it).

    ``flush_hooks`` run at the start of every flush, so writes held back in memory (the processor's
    buckets, :mod:`data_plane.throttle.buckets`) are owed by the flush that precedes a commit.
    """

    def __init__(self, *args: Any, log_format: LogFormat = "text", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flush_hooks: list[Callable[[], object]] = []
        self.log_format = log_format  # how its worker writes log lines (DUALPLANE_LOG_FORMAT)

    def _new_producer(self) -> ProducerT:
        return ChangelogSafeProducer(self.transport, loop=self.loop, beacon=self.beacon)
