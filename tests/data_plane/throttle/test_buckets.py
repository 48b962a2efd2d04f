"""The processor's bucket store: counted at once, written to the changelog once per flush (no broker)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from faust.tables.wrappers import WindowWrapper

from dualplane import schemas
from dualplane.data_plane.throttle.buckets import BucketStore
from dualplane.data_plane.throttle.events import FetchSample, parse_fetch_event
from dualplane.data_plane.throttle.producer import ThrottleApp
from dualplane.data_plane.throttle.windows import counts_of

pytestmark = pytest.mark.unit

T0 = 1_800_000_000.0


def sample(domain: str, at_s: float, outcome: str = "ok") -> FetchSample:
    record = {
        "job_id": "j", "trace_id": "t", "task_id": "k", "url": f"https://{domain}/", "final_url": None,
        "domain": domain, "outcome": outcome, "status": None, "latency_ms": 100, "bytes": 1, "attempt": 1,
        "fetched_at": datetime.fromtimestamp(at_s, UTC), "retry_after_s": None,
    }  # fmt: skip
    return parse_fetch_event(schemas.encode("fetch_event", record))


def with_store(scenario: Any) -> None:
    async def main() -> None:
        app = ThrottleApp("unit-throttle-buckets", broker="kafka://127.0.0.1:1", store="memory://")
        table = app.Table("buckets", default=dict, partitions=4).tumbling(10.0, expires=70.0)
        store = BucketStore(cast(WindowWrapper, table), size_s=60.0, step_s=10.0)
        sent: list[tuple[int, Any, Any]] = []
        store.table.send_changelog = lambda partition, key, value: sent.append((partition, key, value))  # type: ignore[method-assign]
        scenario(store, sent)

    asyncio.run(main())


def test_events_count_at_once_and_each_changed_bucket_is_written_once_per_flush() -> None:
    def scenario(store: BucketStore, sent: list[tuple[int, Any, Any]]) -> None:
        for offset in range(5):
            store.add(sample("a.test", T0 + offset, "rate_limited" if offset % 2 else "ok"), 2, offset)
        store.add(sample("a.test", T0 + 12), 2, 5)  # the next bucket
        store.add(sample("b.test", T0 + 1), 3, 0)
        window = (T0 - 50, T0 + 9.9)  # the 60 s window ending with the first bucket
        assert counts_of(store.window_value("a.test", window)).total == 5
        assert counts_of(store.window_value("a.test", window)).blocked == 2
        assert counts_of(store.window_value("a.test", (T0, T0 + 59.9))).total == 6
        assert sent == [], "nothing is written before the flush"
        assert store.write() == 3
        assert sorted((p, k[0], v["total"]) for p, k, v in sent) == [
            (2, "a.test", 1),
            (2, "a.test", 5),
            (3, "b.test", 1),
        ]
        assert store.write() == 0, "a bucket is written again only once it changes again"

    with_store(scenario)


def test_an_event_delivered_again_is_not_counted_twice_and_old_buckets_expire() -> None:
    def scenario(store: BucketStore, sent: list[tuple[int, Any, Any]]) -> None:
        for offset in (7, 8, 8, 7):  # 8 and 7 again, as after a crash before the offsets' commit
            store.add(sample("a.test", T0 + 1), 0, offset)
        assert counts_of(store.window_value("a.test", (T0, T0 + 59.9))).total == 2
        store.add(sample("a.test", T0 + 100), 0, 9)
        assert store.drop_expired(now_s=T0 + 100, expires_s=70.0) == 1
        assert counts_of(store.window_value("a.test", (T0, T0 + 59.9))).total == 0
        store.write()
        assert [k[1][0] for _, k, _ in sent] == [T0 + 100], "a dropped bucket is not written"

    with_store(scenario)
