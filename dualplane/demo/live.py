"""The demo's live view, read from this process's own Prometheus registry (the services run here):
pages/s, queue depth per lane, consumer lag, records produced, job counters, and the throttle per host.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import REGISTRY
from rich.console import Group
from rich.table import Table

from dualplane.core.web.urls import domain_of
from dualplane.data_plane.throttle import ThrottleView
from dualplane.sample_site import SampleSite

COUNTERS = (
    "seeded",
    "discovered",
    "duplicates",
    "queued",
    "in_flight",
    "retrying",
    "done",
    "failed",
    "backlog",
)
WANTED = ("dualplane_fetches", "dualplane_queue_messages", "dualplane_kafka_consumer_lag",
          "dualplane_extractor_records")  # fmt: skip


def readings() -> dict[str, list[tuple[dict[str, str], float]]]:
    """The samples of the metrics the view shows, by name (one pass over the registry)."""
    found: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in REGISTRY.collect():
        if family.name in WANTED:
            for sample in family.samples:
                if not sample.name.endswith("_created"):
                    found[family.name].append((dict(sample.labels), float(sample.value)))
    return found


@dataclass
class LiveView:
    """Turns successive readings into rates and tables."""

    site: SampleSite
    view: ThrottleView
    started: float = field(default_factory=time.monotonic)
    _last: tuple[float, float, dict[int, tuple[int, int]]] | None = None
    pages_per_s: float = 0.0
    block_ratio: dict[int, float] = field(default_factory=dict)

    def render(self, snapshot: dict[str, Any]) -> Group:
        found = readings()
        fetches = sum(value for _, value in found["dualplane_fetches"])
        self._rates(fetches)
        records = sum(value for _, value in found["dualplane_extractor_records"])
        lag = sum(value for _, value in found["dualplane_kafka_consumer_lag"])
        head = (f"{time.monotonic() - self.started:5.1f} s   {self.pages_per_s:5.1f} fetches/s   "
                f"{int(records)} records produced   extractor lag {int(lag)}")  # fmt: skip
        return Group(head, self._job(snapshot), self._lanes(found), self._hosts())

    def limits(self) -> dict[str, int]:
        """P_d per host, as the fleet runs it now."""
        return {h.url: self.view.details(domain_of(h.url)).concurrency for h in self.site.stats().hosts}

    def _rates(self, fetches: float) -> None:
        now = time.monotonic()
        hosts = {
            h.host: (h.total_requests, int(h.by_status.get("429", 0)) + h.challenges)
            for h in self.site.stats().hosts
        }
        if self._last is not None and now - self._last[0] >= 1.0:
            then, fetched, before = self._last
            self.pages_per_s = (fetches - fetched) / (now - then)
            for host, (total, blocked) in hosts.items():
                served = total - before[host][0]
                self.block_ratio[host] = (blocked - before[host][1]) / served if served else 0.0
        if self._last is None or now - self._last[0] >= 1.0:
            self._last = (now, fetches, hosts)

    def _job(self, snapshot: dict[str, Any]) -> Table:
        table = Table(title="job (frontier counters)", title_justify="left")
        for name in COUNTERS:
            table.add_column(name.replace("_", " "), justify="right")
        table.add_row(*(str(snapshot.get(name, 0)) for name in COUNTERS))
        return table

    def _lanes(self, found: dict[str, list[tuple[dict[str, str], float]]]) -> Table:
        table = Table(title="queues (ready / in flight)", title_justify="left")
        depth: dict[str, dict[str, float]] = defaultdict(dict)
        for labels, value in found["dualplane_queue_messages"]:
            depth[labels["queue"].split(".", 1)[-1]][labels["state"]] = value
        names = [name for name in depth if name.startswith(("tasks.", "retry.", "dead"))]
        for name in names:
            table.add_column(name, justify="right")
        table.add_row(
            *(f"{int(depth[n].get('ready', 0))} / {int(depth[n].get('unacked', 0))}" for n in names)
        )
        return table

    def _hosts(self) -> Table:
        table = Table(title="hosts: the site's view and the fleet's limits", title_justify="left")
        for column in ("host", "anti-bot", "req/s (10 s)", "block ratio (1 s)", "P_d", "delay", "set by"):
            table.add_column(column, justify="right")
        for host in self.site.stats().hosts:
            limits = self.view.details(domain_of(host.url))
            guarded = "on" if self.site.anti_bot(host.host) else "off"
            ratio = f"{self.block_ratio.get(host.host, 0.0):.0%}"
            table.add_row(host.url, guarded, f"{host.rate_10s:.1f}", ratio, str(limits.concurrency),
                          f"{limits.delay_ms} ms", limits.source)  # fmt: skip
        return table
