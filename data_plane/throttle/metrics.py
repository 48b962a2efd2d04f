"""The throttle's figures as Prometheus metrics, read from the processor's snapshot when scraped.

The processor is a Faust child process of ``dualplane run throttle``; it already writes its state
to the snapshot file (:mod:`.snapshot`) every ``DUALPLANE_THROTTLE_SNAPSHOT_INTERVAL_S``, so the parent
exports that: no second endpoint, nothing added to the agent's path. Per domain (P_d, delay, paused,
block ratio of the window last judged) only the ``DUALPLANE_METRICS_MAX_DOMAINS`` that matter most
are exported: throttled or paused first, then by block ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dualplane.core import metrics
from dualplane.data_plane.throttle.exceptions import ThrottleError
from dualplane.data_plane.throttle.snapshot import read_snapshot

SNAPSHOT_TTL_S = 1.0

DOMAIN_GAUGES = (
    ("dualplane_throttle_block_ratio", "Blocked share (429, 403, challenges) of the window last judged"),
    ("dualplane_throttle_concurrency", "P_d: concurrent requests the fleet may send the domain"),
    ("dualplane_throttle_delay_ms", "Delay between requests to the domain"),
    ("dualplane_throttle_paused", "1 while the domain is paused"),
)


def block_ratio(entry: Mapping[str, Any]) -> float:
    window = entry.get("window") or {}
    return float(window.get("blocked_ratio") or 0.0)


def top_domains(snapshot: Mapping[str, Any], limit: int) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``limit`` domains that matter most: paused, then below the ceiling, then most blocked."""
    ceiling = int(snapshot.get("policy", {}).get("ceiling") or 0)
    domains: Mapping[str, Mapping[str, Any]] = snapshot.get("domains", {})

    def weight(item: tuple[str, Mapping[str, Any]]) -> tuple[bool, bool, float, str]:
        entry = item[1]
        throttled = int(entry.get("concurrency", ceiling)) < ceiling
        return (not entry.get("paused"), not throttled, -block_ratio(entry), item[0])

    return sorted(domains.items(), key=weight)[:limit]


def watch_snapshot(path: Path, max_domains: int) -> None:
    """Export the processor's per-domain limits and block ratios, and its event and command counts."""
    cache: dict[str, Mapping[str, Any]] = {}

    def snapshot() -> Mapping[str, Any]:
        try:
            cache["last"] = read_snapshot(path)
        except ThrottleError:
            cache.setdefault("last", {})  # not written yet: no series rather than a failed scrape
        return cache["last"]

    for index, (name, documentation) in enumerate(DOMAIN_GAUGES):
        read = _domain_reader(snapshot, index, max_domains)
        metrics.probe(name, documentation, read, labels=("domain",), ttl_s=SNAPSHOT_TTL_S)
    for stat in ("events", "commands"):
        metrics.probe(
            f"dualplane_throttle_{stat}",
            f"Throttle processor: {stat} since it started",
            _stat_reader(snapshot, stat),
            kind="counter",
            ttl_s=SNAPSHOT_TTL_S,
        )


Snapshot = Callable[[], Mapping[str, Any]]


def _stat_reader(snapshot: Snapshot, stat: str) -> Callable[[], list[metrics.Sample]]:
    return lambda: [({}, float(snapshot().get("stats", {}).get(stat, 0)))]


def _domain_reader(snapshot: Snapshot, index: int, limit: int) -> Callable[[], list[metrics.Sample]]:
    def read() -> list[metrics.Sample]:
        rows: list[metrics.Sample] = []
        for domain, entry in top_domains(snapshot(), limit):
            values = (
                block_ratio(entry),
                float(entry.get("concurrency", 0)),
                float(entry.get("delay_ms", 0)),
                float(bool(entry.get("paused"))),
            )
            rows.append(({"domain": domain}, values[index]))
        return rows

    return read
