"""Every domain's step buckets: counted in memory per event, written to their changelog per commit.

A fetch event changes one bucket (:mod:`data_plane.throttle.windows`). Written through the table, each
event cost a changelog message, a Faust future and a produce: most of the processor's CPU and a
share of Kafka's under a crawl. Here the event is counted into the table's local store at once, so
every read (the policy's judgement on this very event, the pages) sees it, and the buckets changed
since the last write are handed to the changelog together, each once, right before the producer is
flushed (:class:`~data_plane.throttle.producer.ChangelogSafeProducer` runs the write first). Faust
flushes the producer before it commits source offsets, so an offset is never committed ahead of the
counts of its events; a crash loses only counts of uncommitted events, which Faust delivers again,
and each bucket's last counted offset keeps them from being counted twice.

Bucket expiry is ours too (Faust expires only what goes through its table API): :meth:`drop_expired`
runs on a timer and after every recovery; the changelog deletes old segments by itself (its
``segment.ms`` is the expiry).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from faust.tables.wrappers import WindowWrapper

from dualplane.data_plane.throttle.events import FetchSample
from dualplane.data_plane.throttle.windows import WindowRange, add_sample, bucket_ranges, merged

BucketKey = tuple[str, WindowRange]


class BucketStore:
    """The buckets of one worker: the tumbling table's local store plus what it has not written yet."""

    def __init__(self, buckets: WindowWrapper, size_s: float, step_s: float) -> None:
        self.table = buckets.table
        if self.table.window is None:
            raise TypeError("BucketStore needs a windowed (tumbling) table")
        self.window = self.table.window
        self.size_s, self.step_s = size_s, step_s
        self.unwritten: dict[BucketKey, int] = {}  # changed bucket -> its changelog partition

    def add(self, sample: FetchSample, partition: int, offset: int) -> None:
        """Count ``sample`` (event ``offset`` of source ``partition``) into its bucket, unless counted."""
        (bucket,) = self.window.ranges(sample.fetched_at_s)
        key = (sample.domain, bucket)
        store = self.table.data
        value = store.get(key) or {}
        if value.get("partition") == partition and value.get("offset", -1) >= offset:
            return  # delivered again after a crash: its count is in the bucket already
        store[key] = add_sample(value, sample, partition, offset)
        # Co-partitioned like the table's own writes: a bucket's changelog partition is its events'.
        self.unwritten[key] = partition

    def write(self) -> int:
        """Hand every bucket changed since the last call to the changelog (the producer's buffer)."""
        unwritten, self.unwritten = self.unwritten, {}
        store = self.table.data
        for key, partition in unwritten.items():
            value = store.get(key)
            if value is not None:
                self.table.send_changelog(partition, key, value)
        return len(unwritten)

    def window_value(self, domain: str, window: WindowRange) -> dict[str, Any]:
        """The counts of ``window``: its buckets summed, read from the store (reading a missing key
        through the table would create it)."""
        store = self.table.data
        return merged(
            store.get((domain, bucket), {}) for bucket in bucket_ranges(window, self.size_s, self.step_s)
        )

    def drop_expired(self, now_s: float, expires_s: float) -> int:
        """Drop buckets that ended more than ``expires_s`` before ``now_s`` from the local store."""
        store = self.table.data
        oldest_end = now_s - expires_s
        stale = [key for key in list(store.keys()) if _window_end(key) < oldest_end]
        for key in stale:
            with contextlib.suppress(KeyError):
                del store[key]
            self.unwritten.pop(key, None)
        return len(stale)


def _window_end(key: Any) -> float:
    try:
        return float(key[1][1])
    except (TypeError, IndexError, ValueError):
        return math.inf  # not a windowed key: keep it
