"""Every service's Prometheus endpoint during a crawl, checked against what really happened, and
the JSON logs of the same crawl: every line JSON, every line about a page with its trace, job and domain.

The services run as ``dualplane run`` processes, each with its own ``DUALPLANE_METRICS_PORT``,
against a sample site whose first host blocks beyond a few requests per second, so the throttle
has something to measure.
"""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from dualplane.sample_site import AntiBot, SampleSite, SiteSpec
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SERVICES = ("frontier", "fetcher", "extractor", "throttle", "s3-sink")
SITE = SiteSpec(
    seed=5, hosts=2, pages_per_host=30, latency_ms=60, anti_bot=AntiBot(3, hosts=(0,), retry_after_s=1)
)

QUICK_THROTTLE = {
    "window_size_s": 6, "window_step_s": 1, "min_samples": 5, "offset_reset": "earliest",
    "snapshot_interval_s": 0.5, "recovery_s": 4.0,
}  # fmt: skip

Scrape = dict[str, dict[tuple[tuple[str, str], ...], float]]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_answers(port: int, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def scrape(port: int) -> Scrape:
    """``{sample name: {sorted labels: value}}`` from one endpoint."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    found: Scrape = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def value(scraped: Scrape, name: str, **labels: str) -> float:
    return scraped.get(name, {}).get(tuple(sorted(labels.items())), 0.0)


@pytest.fixture
def settings(control_plane: ControlPlaneFactory, tmp_path: Path) -> Settings:
    base = control_plane.settings(retry_tiers="1s=1000,3s=3000,6s=6000")  # 429s come back in seconds
    return base.model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=4, domain_delay_ms=20, fetch_concurrency=16),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
            "stack": base.stack.model_copy(update={"data_dir": tmp_path / "stack"}),
            "throttle": base.throttle.model_copy(
                update={
                    "window_size_s": 6,
                    "window_step_s": 1,
                    "min_samples": 5,
                    "offset_reset": "earliest",
                    "snapshot_interval_s": 0.5,
                    "recovery_s": 4.0,
                }
            ),
            "sink": base.sink.model_copy(update={"idle_flush_s": 2}),
            "log": base.log.model_copy(update={"format": "json"}),
        }
    )


@pytest.fixture
def ports(settings: Settings, tmp_path: Path) -> Iterator[dict[str, int]]:
    pipeline = Pipeline(settings, tmp_path)
    ports = {service: _free_port() for service in SERVICES}
    try:
        for service, port in ports.items():
            pipeline.start(service, env={"DUALPLANE_METRICS_PORT": str(port)}, log_level="debug")
        for port in ports.values():
            _wait_answers(port)
        yield ports
    finally:
        pipeline.stop_all()


def test_every_service_exports_real_figures_while_it_crawls(
    settings: Settings, ports: dict[str, int], tmp_path: Path
) -> None:
    probe = JobProbe(settings)
    with SampleSite(SITE) as site:
        blocked_domain = domain_of(site.seeds[0])
        probe.submit(JobSpec(job_id="metrics", allowed_domains=tuple(map(domain_of, site.seeds))), site.seeds)
        scrapes = _scrape_during(ports, blocked_domain)
        probe.wait_finished("metrics", timeout_s=240)
        after = {service: scrape(port) for service, port in ports.items()}

    # During the crawl: requests and queues were live, and the throttle saw the blocks.
    during = scrapes[-1]
    fetcher, frontier, throttle = during["fetcher"], during["frontier"], during["throttle"]
    assert value(fetcher, "dualplane_fetches_total", outcome="ok") > 0, fetcher
    assert value(fetcher, "dualplane_fetches_total", outcome="rate_limited") > 0
    assert max(_in_flight(one) for one in scrapes) > 0, "no scrape caught a request in flight"
    assert set(fetcher["dualplane_fetch_in_flight"]) == {
        (("lane", lane),) for lane in ("high", "normal", "bulk")
    }
    assert value(frontier, "dualplane_frontier_urls_total", verdict="discovered") > 0
    lane = settings.queues.crawl_tasks + ".normal"
    assert _exports_queue(ports["frontier"], lane), f"the frontier never exported the depth of {lane}"
    # The autoscaling signals (docs/multi-machine.md): the lane's consumers (one fetcher process)
    # beside its depth, and how long tasks waited in their lanes.
    assert _lane_consumers(ports["frontier"], lane) >= 1, f"no consumer of {lane} exported"
    assert any(_judged(one, blocked_domain) for one in scrapes), "the throttle never judged the blocking host"
    assert value(throttle, "dualplane_throttle_events_total") > 0

    # After it: the counters equal what Kafka holds.
    events = read_topic(settings, settings.topics.fetch_events)
    by_outcome = Counter(event["outcome"] for event in events)
    fetched = after["fetcher"]
    for outcome, count in by_outcome.items():
        assert value(fetched, "dualplane_fetches_total", outcome=outcome) == count, (outcome, by_outcome)
    pages = read_topic(settings, settings.topics.pages_raw)
    records = read_topic(settings, settings.topics.records)
    assert value(fetched, "dualplane_kafka_produced_messages_total", topic=settings.topics.pages_raw) == len(
        pages
    )
    assert value(fetched, "dualplane_fetch_duration_seconds_count") == len(events)
    # Every attempt came from a delivery (and a deferred task is delivered again): each one's wait
    # in its lane was measured, from the publish timestamp or the retry tier's x-death time.
    waits = fetched["dualplane_lane_wait_seconds_count"]
    assert sum(waits.values()) >= len(events) > 0, waits
    assert value(fetched, "dualplane_lane_wait_seconds_sum", lane="normal") >= 0
    extractor = after["extractor"]
    assert value(extractor, "dualplane_kafka_produced_messages_total", topic=settings.topics.records) == len(
        records
    )
    assert value(extractor, "dualplane_extractor_pages_total") == len(pages)
    group = f"{settings.kafka.group_prefix}-extractor"
    assert value(extractor, "dualplane_kafka_consumer_lag", group=group, topic=settings.topics.pages_raw) == 0
    assert value(after["frontier"], "dualplane_frontier_tasks_issued_total") >= len(pages)
    assert value(after["throttle"], "dualplane_throttle_concurrency", domain=blocked_domain) >= 1
    sink = _sink_caught_up(ports["s3-sink"], settings)
    assert value(sink, "dualplane_sink_archived_total", what="records") == len(pages) + len(records)
    _check_json_logs(tmp_path, "metrics")


def _exports_queue(port: int, queue: str, timeout_s: float = 15) -> bool:
    """Whether the endpoint exports ``queue``'s depth within ``timeout_s``: depths are read from the
    management API and kept for five seconds, and a read made while the service was still declaring
    its queues (the endpoint answers first) lacks the later ones until it expires."""
    deadline = time.monotonic() + timeout_s
    while True:
        if (("queue", queue), ("state", "ready")) in scrape(port).get("dualplane_queue_messages", {}):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def _lane_consumers(port: int, queue: str, timeout_s: float = 30) -> float:
    """``queue``'s consumers as the endpoint exports them, once at least one (or after ``timeout_s``):
    the management API counts a new consumer at its next statistics round, the probe keeps 5 s."""
    deadline = time.monotonic() + timeout_s
    while True:
        consumers = scrape(port).get("dualplane_queue_consumers", {}).get((("queue", queue),), 0.0)
        if consumers >= 1 or time.monotonic() > deadline:
            return consumers
        time.sleep(0.5)


def _scrape_during(ports: dict[str, int], blocked_domain: str) -> list[dict[str, Scrape]]:
    """Scrape every endpoint each tenth of a second until a scrape showed the throttle had judged the
    blocking host and one caught requests in flight (or 90 s pass). Pages answer in 60 ms so that
    requests spend long enough in flight to be seen by a scrape; the crawl is over in seconds."""
    scrapes: list[dict[str, Scrape]] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        scrapes.append({service: scrape(port) for service, port in ports.items()})
        if any(_judged(one, blocked_domain) for one in scrapes) and any(_in_flight(one) for one in scrapes):
            break
        time.sleep(0.1)
    return scrapes


def _judged(scraped: dict[str, Scrape], domain: str) -> bool:
    """Whether this scrape shows the throttle acting on ``domain``'s blocks: a block ratio above zero
    in the window it last judged, P_d below the ceiling (4), or a delay above the base (20 ms). Any
    one may be the only trace: after a backoff the throttle judges only the window that starts after
    the change, where a host that stops blocking when slowed down shows a ratio of 0 (as seen under a
    loaded CI run), and the rate controller may slow a domain by its delay alone."""
    throttle = scraped["throttle"]
    ratio = value(throttle, "dualplane_throttle_block_ratio", domain=domain)
    concurrency = throttle.get("dualplane_throttle_concurrency", {}).get((("domain", domain),))
    delay_ms = throttle.get("dualplane_throttle_delay_ms", {}).get((("domain", domain),))
    slowed = (concurrency is not None and concurrency < 4) or (delay_ms is not None and delay_ms > 20)
    return ratio > 0 or slowed


def _sink_caught_up(port: int, settings: Settings, timeout_s: float = 60) -> Scrape:
    """The sink's figures once its lag is zero on both topics (idle partitions are flushed after 2 s)."""
    group, topics = settings.sink_group, (settings.topics.pages_raw, settings.topics.records)
    deadline = time.monotonic() + timeout_s
    while True:
        scraped = scrape(port)
        lag = sum(value(scraped, "dualplane_kafka_consumer_lag", group=group, topic=t) for t in topics)
        present = all(
            (("group", group), ("topic", t)) in scraped.get("dualplane_kafka_consumer_lag", {})
            for t in topics
        )
        if (present and lag == 0) or time.monotonic() > deadline:
            return scraped
        time.sleep(1)


def _in_flight(scraped: dict[str, Scrape]) -> float:
    return sum(scraped["fetcher"].get("dualplane_fetch_in_flight", {}).values())


def _check_json_logs(tmp_path: Path, job_id: str) -> None:
    """Every line of the services' own logs is JSON; every line naming a page carries its context."""
    about_pages = 0
    for path in tmp_path.glob("*.log"):
        if path.name.startswith("throttle"):
            continue  # Faust's worker child writes its own log format
        for line in path.read_text().splitlines():
            if not line.startswith("{"):
                assert line.startswith("%"), f"{path.name}: not JSON and not librdkafka: {line[:200]}"
                continue
            record = json.loads(line)
            if "http://127.0.0.1:" in record["message"] and record["logger"].startswith(
                ("dualplane.control_plane", "dualplane.data_plane")
            ):
                about_pages += 1
                assert record.get("job_id") == job_id, record
                assert record.get("trace_id") and record.get("domain"), record
    assert about_pages > 20
