"""Prometheus metrics: each process's endpoint, the figures all stages share, and probes.

Every ``dualplane run`` process has one registry (prometheus-client's default) and, when
``DUALPLANE_METRICS_PORT`` is set, one endpoint (:func:`serve`); ``--processes N`` gives child ``i``
the port + ``i`` (separate registries are simpler and cheaper than prometheus-client's multiprocess
mode, which cannot export values computed at scrape time). Figures come two ways:

- **counted where they happen**: a ``Counter`` or ``Histogram`` of the stage's ``metrics`` module,
  its label children bound once, so the hot path pays one increment (well under a microsecond);
- **read when scraped**: a *probe*, a function registered under a metric name (:func:`probe`) and
  called only when Prometheus scrapes, at most every ``ttl_s`` when it has to ask a broker
  (queue depths, consumer lag). In-flight requests, counts a service already keeps and the
  throttle's per-domain limits cost nothing between scrapes.

Registering a probe again under the same name replaces it (tests build many services in one process).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from prometheus_client import REGISTRY, Counter, disable_created_metrics, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from dualplane.core.settings import MetricsSettings

log = logging.getLogger(__name__)

Sample = tuple[Mapping[str, str], float]
"""One value of a probe: its labels and the value."""

ProbeKind = Literal["gauge", "counter"]

disable_created_metrics()  # type: ignore[no-untyped-call]  # a `_created` series beside every counter doubles the output for nothing

DEAD_LETTERS = Counter(
    "dualplane_dead_letters", "Messages dead-lettered, by service and stage", ["service", "stage"]
)
PRODUCED = Counter("dualplane_kafka_produced_messages", "Messages Kafka confirmed, by topic", ["topic"])
CONSUMED = Counter("dualplane_kafka_consumed_messages", "Messages read from Kafka, by topic", ["topic"])
AMQP_CONSUMED = Counter(
    "dualplane_amqp_consumed_messages", "Messages delivered from RabbitMQ, by queue", ["queue"]
)
RETRY_RELAYED = Counter(
    "dualplane_retry_relayed_messages", "Tasks the retry relay handed back to their lanes, by tier", ["queue"]
)


@dataclass
class Probe:
    """A metric family read at scrape time; ``read`` returns its samples."""

    name: str
    documentation: str
    read: Callable[[], Iterable[Sample]]
    labels: tuple[str, ...] = ()
    kind: ProbeKind = "gauge"
    ttl_s: float = 0.0
    _cached: list[Sample] = field(default_factory=list)
    _read_at: float = float("-inf")

    def samples(self) -> list[Sample]:
        now = time.monotonic()
        if now - self._read_at >= self.ttl_s:
            self._cached = list(self.read())
            self._read_at = now
        return self._cached

    def family(self) -> Metric:
        family_type = CounterMetricFamily if self.kind == "counter" else GaugeMetricFamily
        family = family_type(self.name, self.documentation, labels=self.labels)
        for labels, value in self.samples():
            family.add_metric([labels[name] for name in self.labels], value)
        return family


class Probes:
    """The collector of every probe of this process (registered once with the default registry)."""

    def __init__(self) -> None:
        self._probes: dict[str, Probe] = {}
        self._lock = threading.Lock()

    def add(self, probe: Probe) -> None:
        with self._lock:
            self._probes[probe.name] = probe

    def remove(self, name: str) -> None:
        with self._lock:
            self._probes.pop(name, None)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            probes = list(self._probes.values())
        for probe in probes:
            try:
                yield probe.family()
            except Exception as error:  # a broker that does not answer must not fail the whole scrape
                log.debug("metrics probe %s failed: %s", probe.name, error)

    def describe(self) -> list[Metric]:
        return []  # registering must not call the probes (they may ask a broker)


PROBES = Probes()
REGISTRY.register(PROBES)


def probe(
    name: str,
    documentation: str,
    read: Callable[[], Iterable[Sample]],
    *,
    labels: tuple[str, ...] = (),
    kind: ProbeKind = "gauge",
    ttl_s: float = 0.0,
) -> None:
    """Export ``read()`` as ``name`` at each scrape (cached for ``ttl_s``); replaces a probe of that name."""
    PROBES.add(Probe(name, documentation, read, labels, kind, ttl_s))


def value(read: Callable[[], float]) -> Callable[[], list[Sample]]:
    """A probe reader of one unlabelled value."""
    return lambda: [({}, float(read()))]


def serve(settings: MetricsSettings, *, offset: int = 0) -> int | None:
    """Start this process's endpoint on ``DUALPLANE_METRICS_PORT + offset``; its port, or None when off."""
    if not settings.port:
        return None
    port = settings.port + offset
    start_http_server(port, addr=settings.bind)
    log.info("metrics at http://%s:%d/metrics", settings.bind, port)
    return port
