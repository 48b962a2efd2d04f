"""The reshard plan moves every row to the shard that owns it, loses nothing and keeps the sums.

Pure logic: shard states are generated as a frontier would leave them (each site's rows in its
shard, job counters per shard matching its backlog rows), planned to another count, and the plan's
records applied in order, as a frontier catching up on the changelog would.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from dualplane.control_plane.frontier.changelog import SEEN_PREFIX
from dualplane.control_plane.frontier.reshard_plan import Partition, plan
from dualplane.control_plane.frontier.store import FUNNEL
from dualplane.core.web.domains import shard_bucket, shard_of

JOBS = ("job-a", "job-b")


def _fleet(shards: int, seed: int) -> dict[int, Partition]:
    """Shard states as frontiers leave them: sites in their shards, counters per shard."""
    rng = random.Random(seed)
    partitions = {index: Partition() for index in range(shards)}
    next_backlog = Counter[int]()
    backlog_rows = Counter[tuple[str, int]]()
    for number in range(40):
        site = f"site-{seed}-{number}.example"
        home = partitions[shard_of(site, shards)]
        home.rows[f"domains/{site}"] = {"domain": site, "outstanding": rng.randrange(4), "permits": 2}
        for task in range(rng.randrange(5)):
            task_id = f"{site}-t{task}"
            state = rng.choice(("queued", "done"))
            home.rows[f"tasks/{task_id}"] = {"task_id": task_id, "job_id": rng.choice(JOBS), "domain": site,
                                             "state": state}  # fmt: skip
        for _ in range(rng.randrange(4)):
            index = shard_of(site, shards)
            next_backlog[index] += 1
            job, row_id = rng.choice(JOBS), next_backlog[index]
            home.rows[f"backlog/{row_id}"] = {"id": row_id, "domain": site, "job_id": job, "task": site}
            backlog_rows[(job, index)] += 1
        bucket = shard_bucket(site)
        home.seen[f"{SEEN_PREFIX}{bucket}/{number}"] = bytes([number]) * 16
    for index, partition in partitions.items():
        for job in JOBS:
            counters = {name: rng.randrange(100) for name in FUNNEL}
            counters["backlog"] = backlog_rows[(job, index)]
            partition.rows[f"jobs/{job}"] = {"job_id": job, "spec": "{}", **counters, "created_at": 1.0}
        partition.rows[f"messages/m{index}"] = {"message_id": f"m{index}", "tasks": "[]"}
    return partitions


def _applied(partitions: dict[int, Partition], shards: int) -> dict[int, Partition]:
    after = {index: Partition(dict(p.rows), dict(p.seen)) for index, p in partitions.items()}
    for index, records in plan(partitions, shards).writes.items():
        target = after.setdefault(index, Partition())
        for key, value in records:
            target.apply(key, value)
    return after


def _site_rows(partitions: dict[int, Partition]) -> Counter[str]:
    """Every domain, task and backlog row by content (backlog ids are per shard, so left out)."""
    rows: Counter[str] = Counter()
    for partition in partitions.values():
        for name, row in partition.rows.items():
            if name.split("/")[0] in ("domains", "tasks", "backlog"):
                rows[repr(sorted((k, v) for k, v in row.items() if k != "id"))] += 1
    return rows


def _job_sums(partitions: dict[int, Partition]) -> dict[str, dict[str, int]]:
    sums: dict[str, Counter[str]] = {}
    for partition in partitions.values():
        for name, row in partition.rows.items():
            if name.startswith("jobs/"):
                sums.setdefault(row["job_id"], Counter()).update({n: row[n] for n in FUNNEL})
    return {job: dict(counter) for job, counter in sums.items()}


@pytest.mark.parametrize(("before", "after"), [(1, 3), (2, 3), (3, 2), (4, 1), (2, 4)])
@pytest.mark.parametrize("seed", range(3))
def test_every_row_lands_in_its_shard_and_nothing_is_lost(before: int, after: int, seed: int) -> None:
    fleet = _fleet(before, seed)
    result = _applied(fleet, after)

    for index, partition in result.items():
        if index >= after:
            assert not partition.rows and not partition.seen, f"partition {index} should be emptied"
            continue
        for name, row in partition.rows.items():
            table = name.split("/")[0]
            if table in ("domains", "tasks", "backlog"):
                site = name.partition("/")[2] if table == "domains" else row["domain"]
                assert shard_of(site, after) == index, f"{name} is in shard {index}"
        for key in partition.seen:
            assert int(key[len(SEEN_PREFIX) :].split("/")[0]) % after == index
        handled = {f"messages/m{i}" for i in range(before) if i % after == index}
        assert handled <= set(partition.rows), "a handled record is not where its message goes"
        assert {f"jobs/{job}" for job in JOBS} <= set(partition.rows)
    assert _site_rows(result) == _site_rows(fleet)
    assert sorted(k for p in result.values() for k in p.seen) == sorted(
        k for p in fleet.values() for k in p.seen
    )
    assert _job_sums(result) == _job_sums(fleet)


@pytest.mark.parametrize(("before", "after"), [(2, 3), (3, 1)])
def test_each_shard_backlog_counter_matches_the_backlog_rows_it_now_holds(before: int, after: int) -> None:
    result = _applied(_fleet(before, seed=11), after)
    for index in range(after):
        rows: Counter[str] = Counter()
        ids: list[int] = []
        for name, row in result[index].rows.items():
            if name.startswith("backlog/"):
                rows[row["job_id"]] += 1
                ids.append(row["id"])
                assert name == f"backlog/{row['id']}"
        assert len(ids) == len(set(ids)), "two backlog rows share an id"
        for job in JOBS:
            assert result[index].rows[f"jobs/{job}"]["backlog"] == rows[job]


def test_planning_again_finds_nothing_to_move() -> None:
    once = _applied(_fleet(2, seed=5), 3)
    again = plan(once, 3)
    assert again.records == 0, dict(again.moved)


def test_the_same_count_moves_nothing() -> None:
    assert plan(_fleet(3, seed=2), 3).records == 0


def test_a_new_shard_gets_each_job_with_zero_counters() -> None:
    result = _applied(_fleet(1, seed=3), 2)
    row: dict[str, Any] = result[1].rows["jobs/job-a"]
    moved_in = sum(
        1 for name, r in result[1].rows.items() if name.startswith("backlog/") and r["job_id"] == "job-a"
    )
    assert {name: row[name] for name in FUNNEL if name != "backlog"} == dict.fromkeys(FUNNEL[:-1], 0)
    assert row["backlog"] == moved_in
    assert row["spec"] == "{}"
