"""What changing the number of frontier shards writes to the changelog: a pure plan, no I/O.

Each site belongs to one shard (its bucket modulo the shard count), so when the count changes,
part of every shard's state belongs elsewhere. The plan reads the live rows of every changelog
partition and says, per partition, which records to append so that each partition then holds
exactly the state of the shard it stands for under the new count:

- a site's rows move with it: ``domains``, ``tasks`` and ``backlog`` rows, and the seen-set
  records of its bucket. A moved row is written to its new partition and a tombstone to its old
  one; a frontier applying the changelog in order (warm or from an empty directory) ends with
  the same state either way.
- backlog rows get fresh ids in their new partition (ids are per shard), in their old order, and
  each job's ``backlog`` counter moves with them, so every shard can release what it holds.
- jobs are known to every shard. A new shard gets each job's rules with zero counters; a shard
  that goes away hands its counters to the shard with its number modulo the new count. The sums
  over shards, which ``dualplane status`` shows, do not change.
- a handled-message record stays with its shard's number modulo the new count, which is where
  its message is moved unchanged (:mod:`.reshard`): that shard republishes what the message
  published instead of handling it twice.
- partitions past the new count are emptied (tombstones), so growing again later starts clean.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dualplane.control_plane.frontier.changelog import SEEN_PREFIX, Record
from dualplane.control_plane.frontier.store import FUNNEL
from dualplane.core.web.domains import shard_of

SITE_TABLES = ("domains", "tasks", "backlog")


@dataclass
class Partition:
    """The live content of one changelog partition: the newest row per key, and seen records."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # "table/key" -> row
    seen: dict[str, bytes] = field(default_factory=dict)  # "seen/<bucket>/<id>" -> packed keys

    def apply(self, key: str, value: Any) -> None:
        """Fold one changelog record in, as compaction would (a tombstone deletes)."""
        target: dict[str, Any] = self.seen if key.startswith(SEEN_PREFIX) else self.rows
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value

    @classmethod
    def of(cls, records: Iterable[tuple[str, Any]]) -> Partition:
        partition = cls()
        for key, value in records:
            partition.apply(key, value)
        return partition


@dataclass
class Plan:
    """Records to append per partition, and what moved (counted by kind, for the report)."""

    writes: dict[int, list[Record]] = field(default_factory=dict)
    moved: Counter[str] = field(default_factory=Counter)

    def write(self, partition: int, key: str, value: Any) -> None:
        self.writes.setdefault(partition, []).append((key, value))

    @property
    def records(self) -> int:
        return sum(len(records) for records in self.writes.values())


def plan(partitions: Mapping[int, Partition], shards: int) -> Plan:
    """The records that turn ``partitions`` (any number) into the state of ``shards`` shards."""
    if shards < 1:
        raise ValueError(f"a frontier needs at least one shard, not {shards}")
    result = Plan()
    backlog_moves: Counter[tuple[str, int]] = Counter()  # (job, partition) -> backlog rows gained
    _move_seen(partitions, shards, result)
    _move_site_rows(partitions, shards, result, backlog_moves)
    _spread_jobs(partitions, shards, result, backlog_moves)
    _move_handled(partitions, shards, result)
    return result


def _move_seen(partitions: Mapping[int, Partition], shards: int, result: Plan) -> None:
    for source, partition in sorted(partitions.items()):
        for key, packed in partition.seen.items():
            bucket = int(key[len(SEEN_PREFIX) :].split("/", 1)[0])
            target = bucket % shards
            if target != source:
                result.write(target, key, packed)
                result.write(source, key, None)
                result.moved["seen_records"] += 1


def _site_of(table: str, key: str, row: Mapping[str, Any]) -> str:
    return key if table == "domains" else str(row["domain"])


def _move_site_rows(
    partitions: Mapping[int, Partition], shards: int, result: Plan, backlog_moves: Counter[tuple[str, int]]
) -> None:
    next_backlog_id = {target: _max_backlog_id(partitions.get(target)) + 1 for target in range(shards)}
    for source, partition in sorted(partitions.items()):
        moving_backlog = []
        for name, row in partition.rows.items():
            table, _, key = name.partition("/")
            if table not in SITE_TABLES:
                continue
            target = shard_of(_site_of(table, key, row), shards)
            if target == source:
                continue
            result.write(source, name, None)
            result.moved[table] += 1
            if table == "backlog":
                moving_backlog.append((int(key), target, row))
            else:
                result.write(target, name, row)
        for _, target, row in sorted(moving_backlog, key=lambda item: item[0]):  # keep their order
            new_id, next_backlog_id[target] = next_backlog_id[target], next_backlog_id[target] + 1
            result.write(target, f"backlog/{new_id}", {**row, "id": new_id})
            backlog_moves[(str(row["job_id"]), source)] -= 1
            backlog_moves[(str(row["job_id"]), target)] += 1


def _max_backlog_id(partition: Partition | None) -> int:
    if partition is None:
        return 0
    ids = [int(name.partition("/")[2]) for name in partition.rows if name.startswith("backlog/")]
    return max(ids, default=0)


def _spread_jobs(
    partitions: Mapping[int, Partition], shards: int, result: Plan, backlog_moves: Counter[tuple[str, int]]
) -> None:
    jobs: dict[str, dict[int, dict[str, Any]]] = {}
    for source, partition in partitions.items():
        for name, row in partition.rows.items():
            if name.startswith("jobs/"):
                jobs.setdefault(name.partition("/")[2], {})[source] = row
    for job_id, rows in sorted(jobs.items()):
        template = rows[min(rows)]
        wanted = {
            index: dict(rows[index]) if index in rows else {**template, **dict.fromkeys(FUNNEL, 0)}
            for index in range(shards)
        }
        for index in set(rows) | set(range(shards)):
            gained = backlog_moves[(job_id, index)]
            if index >= shards:  # a shard that goes away: its counters go to index % shards
                _add_counters(wanted[index % shards], rows[index], gained)
                result.write(index, f"jobs/{job_id}", None)
            else:
                _add_counters(wanted[index], {}, gained)
        for index, row in wanted.items():
            if rows.get(index) != row:
                result.write(index, f"jobs/{job_id}", row)
                result.moved["jobs"] += 1


def _add_counters(row: dict[str, Any], other: Mapping[str, Any], backlog_gained: int) -> None:
    for name in FUNNEL:
        row[name] = int(row.get(name, 0)) + int(other.get(name, 0))
    row["backlog"] += backlog_gained


def _move_handled(partitions: Mapping[int, Partition], shards: int, result: Plan) -> None:
    for source, partition in sorted(partitions.items()):
        if source < shards:
            continue
        for name, row in partition.rows.items():
            if name.startswith("messages/"):
                result.write(source % shards, name, row)
                result.write(source, name, None)
                result.moved["handled_messages"] += 1


def handled_ids(partitions: Mapping[int, Partition]) -> set[str]:
    """Ids of messages some shard handled (their acks may not have been committed)."""
    return {
        name.partition("/")[2]
        for partition in partitions.values()
        for name in partition.rows
        if name.startswith("messages/")
    }


def job_rules(partitions: Mapping[int, Partition]) -> dict[str, str]:
    """Each job some shard holds, with its rules (the ``JobSpec`` JSON the shard saved)."""
    return {
        name.partition("/")[2]: str(row["spec"])
        for partition in partitions.values()
        for name, row in partition.rows.items()
        if name.startswith("jobs/")
    }
