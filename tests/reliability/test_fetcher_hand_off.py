"""A fetcher acks its task only after Kafka confirmed the raw page and the event: shown directly.

The fetcher (``dualplane run fetcher``, a real process) reaches Kafka through a relay that holds
Kafka's answers back on request (``tests/support/kafka_relay.py``): the page is written, but the
fetcher never hears so. Meanwhile the task must stay unacked. Killed in that state, the fetcher's
task comes back to the lane and another fetcher fetches the page again, so ``pages.raw`` holds it
twice; the extractor must still commit exactly one record. Let through instead, the confirmation
arrives and the task is acked: nothing comes back.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp import management, permits
from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.connectors.storage.claim_check import ClaimCheckStore
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.outputs import KafkaOutputs
from dualplane.control_plane.fetcher.runner import TaskRunner
from dualplane.control_plane.fetcher.worker import Fetcher
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.extractor.records import iter_records
from dualplane.data_plane.extractor.service import Extractor
from dualplane.data_plane.throttle.view import ThrottleView
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.frontier import JobProbe
from tests.support.kafka_relay import KafkaRelay
from tests.support.pipeline import Pipeline, read_topic
from tests.support.recording_server import RecordingHost
from tests.support.tcp_relay import TcpRelay, free_port
from tests.support.threads import running

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FIRST = "/first"  # the domain's first task: its permits are made with it
HELD_S = 4.0  # how long the task must stay unacked while the confirmation is held back


@pytest.fixture
def private(control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory) -> Settings:
    base = control_plane.settings()
    made = base.model_copy(
        update={
            "s3": base.s3.model_copy(update={"bucket": s3_buckets.create()}),
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=0, fetch_concurrency=4),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5, delay_jitter=0),
        }
    )
    prepare_data_plane(made)
    return made


@pytest.fixture
def relay(private: Settings) -> Iterator[KafkaRelay]:
    host, port = private.kafka.bootstrap_servers.split(",")[0].rsplit(":", 1)
    made = KafkaRelay((host, int(port)))
    yield made
    made.close()


@pytest.fixture
def pipeline(private: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    made = Pipeline(private, tmp_path)
    yield made
    made.stop_all()


@pytest.fixture
def host() -> Iterator[RecordingHost]:
    with RecordingHost(latency_s=0.01) as made:
        yield made


def _hand_task(settings: Settings, host: RecordingHost, path: str) -> CrawlTask:
    """One task in the normal lane, with the domain's permits in place (as the frontier does)."""
    topology = Topology(settings.queues)
    url, domain = f"{host.base_url}{path}", domain_of(host.base_url)
    task = CrawlTask(job_id="held", trace_id="held-trace", url=url, domain=domain, depth=0)
    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        topology.declare(channel)
        if path == FIRST:
            permits.refill(channel, topology, domain, 2)
        publish(channel, topology.tasks_exchange, task.priority, task)
    finally:
        connection.close()
    return task


def _warm(settings: Settings, host: RecordingHost, probe: JobProbe, lane: str) -> None:
    """A first task handed on before anything is held: the fetcher's producer then knows the topics'
    partitions and leaders (held metadata answers would stop it before it writes anything).

    It must be *acked* before the answers are held, not only taken: on a quiet machine the page is
    read back from Kafka before Kafka's answer reaches the fetcher, and a warm-up task still waiting
    for it is held too, so two tasks, not one, came back when the fetcher was killed (CI, twice)."""
    warm = _hand_task(settings, host, FIRST)
    _eventually(lambda: len(_raw_pages(settings, warm.url)) == 1, 60, "the warm-up page")
    _eventually(lambda: probe.queue_depth(lane) == 0, 30, "the warm-up task taken")
    _eventually(lambda: _acks(settings, lane) >= 1, 60, "the warm-up task acked")


def _acks(settings: Settings, queue: str) -> int:
    """Acks the broker has counted on ``queue`` so far (management API; it lags by a few seconds).
    The count only grows, so unlike the unacked gauge, which lags too, it cannot read 0 too early."""
    vhost = quote(amqp.connection_parameters(settings.amqp).virtual_host, safe="")
    stats = management.get(settings.amqp, f"/api/queues/{vhost}/{quote(queue, safe='')}")
    return int(stats.get("message_stats", {}).get("ack", 0))


def _start_fetcher(pipeline: Pipeline, probe: JobProbe, lane: str, **env: str) -> subprocess.Popen[bytes]:
    before = probe.consumers(lane)
    process = pipeline.start("fetcher", env=env)
    _eventually(lambda: probe.consumers(lane) > before, 120, "the fetcher to consume the lanes")
    return process


def _held_env(relay: KafkaRelay) -> dict[str, str]:
    """A fetcher behind the relay that waits for a held confirmation as long as the test needs.

    The default hand-off timeout (30 s) would give the task back on its own on a loaded machine,
    where the page can take most of that to reach Kafka: that path has its own test below."""
    return {"DUALPLANE_KAFKA_BOOTSTRAP_SERVERS": relay.bootstrap, "DUALPLANE_FETCH_HAND_OFF_TIMEOUT_S": "600"}


def _eventually(
    check: Callable[[], bool], timeout_s: float, what: str, explain: Callable[[], str] = lambda: ""
) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{explain()}"
        time.sleep(0.2)


def _raw_pages(settings: Settings, url: str) -> list[dict[str, object]]:
    return [page for page in read_topic(settings, settings.topics.pages_raw) if page["url"] == url]


def test_a_task_is_not_acked_until_kafka_confirms_and_comes_back_when_the_fetcher_dies_first(
    private: Settings, relay: KafkaRelay, pipeline: Pipeline, host: RecordingHost
) -> None:
    probe = JobProbe(private)
    lane = Topology(private.queues).lane_queue("normal")
    doomed = _start_fetcher(pipeline, probe, lane, **_held_env(relay))
    _warm(private, host, probe, lane)
    relay.stall_answers()
    task = _hand_task(private, host, "/page/0")

    _eventually(lambda: len(_raw_pages(private, task.url)) == 1, 60, "the raw page in Kafka")
    time.sleep(HELD_S)  # Kafka has the page; the fetcher is still waiting for its confirmation
    assert host.requests["/page/0"] == 1
    assert probe.queue_depth(lane) == 0, "the task went back to the lane while its fetcher lived"

    pipeline.kill(doomed)
    # An acked task would be gone for good; an unacked one returns to the lane when its fetcher dies.
    _eventually(
        lambda: probe.queue_depth(lane) == 1,
        60,
        "the unacked task to come back",
        lambda: f"lane depth {probe.queue_depth(lane)} (1 expected)\n{pipeline.logs()}",
    )

    _start_fetcher(pipeline, probe, lane)  # straight to Kafka
    _eventually(lambda: len(_raw_pages(private, task.url)) == 2, 60, "the page fetched again")
    _eventually(lambda: probe.queue_depth(lane) == 0, 30, "the task taken")
    time.sleep(1)  # its ack is committed with the fetcher's next pass
    pipeline.stop_all()  # SIGTERM: whatever it had not acked would go back to the lane
    assert probe.queue_depth(lane) == 0, "the survivor did not ack the task it handed on"
    assert host.requests["/page/0"] == 2

    # Two copies of the page on pages.raw, and one record: the extractor skips the second.
    extractor = Extractor(private)
    thread = threading.Thread(target=extractor.run, daemon=True)
    thread.start()
    expected = {task.url: 1, f"{host.base_url}{FIRST}": 1}

    def records() -> Counter[str]:
        return Counter(record.url for record in iter_records(private, follow=False))

    try:
        # Pages are counted when handled, records become visible when their transaction commits.
        _eventually(lambda: extractor.pages >= 3 and records() == expected, 120, "both pages' records")
    finally:
        extractor.stop()
        thread.join(30)
    assert records() == expected  # and no second record came after them
    assert extractor.duplicates == 1


def test_a_task_is_acked_once_the_held_confirmation_arrives(
    private: Settings, relay: KafkaRelay, pipeline: Pipeline, host: RecordingHost
) -> None:
    probe = JobProbe(private)
    lane = Topology(private.queues).lane_queue("normal")
    _start_fetcher(pipeline, probe, lane, **_held_env(relay))
    _warm(private, host, probe, lane)
    relay.stall_answers()
    task = _hand_task(private, host, "/page/0")
    _eventually(lambda: len(_raw_pages(private, task.url)) == 1, 60, "the raw page in Kafka")
    time.sleep(HELD_S)
    assert probe.queue_depth(lane) == 0

    relay.resume()  # the confirmation arrives; the fetcher acks with its next pass
    time.sleep(2)
    pipeline.stop_all()  # SIGTERM: an unacked task would go back to the lane

    assert probe.queue_depth(lane) == 0, "the task was not acked after Kafka confirmed it"
    assert host.requests["/page/0"] == 1
    assert len(_raw_pages(private, task.url)) == 1


def test_a_hand_off_kafka_never_confirms_is_given_back_in_time_and_acked_once_kafka_answers(
    private: Settings, relay: KafkaRelay, pipeline: Pipeline, host: RecordingHost
) -> None:
    """The stall the chaos crawl met after a Kafka restart: Kafka has the messages and never says
    so, and there is no error either. The fetcher must give the task back after
    ``DUALPLANE_FETCH_HAND_OFF_TIMEOUT_S`` (3 s here; librdkafka's default kept it 5 minutes,
    holding the permit), replace its producer, fetch the page again, and ack once Kafka answers."""
    probe, topology = JobProbe(private), Topology(private.queues)
    lane = topology.lane_queue("normal")
    env = {"DUALPLANE_KAFKA_BOOTSTRAP_SERVERS": relay.bootstrap, "DUALPLANE_FETCH_HAND_OFF_TIMEOUT_S": "3"}
    _start_fetcher(pipeline, probe, lane, **env)
    _warm(private, host, probe, lane)
    relay.stall_answers()
    task = _hand_task(private, host, "/page/0")
    _eventually(lambda: host.requests["/page/0"] == 1, 30, "the page fetched")
    # Given back through the 5 s tier: fetched again well before librdkafka's 300 s.
    _eventually(
        lambda: host.requests["/page/0"] >= 2, 40, "the unconfirmed task given back and fetched again"
    )
    # The producer that left it unconfirmed is replaced before the next message is produced, i.e.
    # just after the refetch's response: wait for that line rather than read the log at once (a
    # loaded CI run read it between the second request and the refetch's hand-off).
    _eventually(lambda: bool(pipeline.lines("replaced it")), 20, "the unconfirming producer replaced")

    relay.resume()
    _eventually(lambda: _quiet(probe, topology, host), 90, "the task acked, nothing queued or delayed")
    fetched = host.requests["/page/0"]
    time.sleep(2)  # its ack is committed with the fetcher's next pass
    pipeline.stop_all()  # SIGTERM: an unacked task would go back to the lane
    assert _settled(probe, topology), "the task was not acked once Kafka confirmed it"
    assert host.requests["/page/0"] == fetched, "the task came back after it was handed on"
    # Every fetch handed its page to Kafka (the held answers hid that, they did not stop it), and the
    # idempotent producer wrote none twice: one copy on pages.raw per fetch, none lost.
    assert len(_raw_pages(private, task.url)) == fetched


def _settled(probe: JobProbe, topology: Topology) -> bool:
    queues = [topology.lane_queue("normal"), *(topology.tier_name(tier) for tier, _ in topology.tiers)]
    return all(probe.queue_depth(queue) == 0 for queue in queues)


def _quiet(probe: JobProbe, topology: Topology, host: RecordingHost, window_s: float = 8.0) -> bool:
    """Settled, and still so with no new request a tier's delay later: a task the fetcher's retry
    relay holds is unacked in its tier, not ready, so :func:`_settled` does not see it; by the end
    of the window (over the 5 s tier) it is back in its lane or fetched again."""
    requests = sum(host.requests.values())
    if not _settled(probe, topology):
        return False
    time.sleep(window_s)
    return _settled(probe, topology) and sum(host.requests.values()) == requests


def test_a_hand_off_that_fails_longer_than_the_delivery_limit_defers_the_task_and_loses_nothing(
    control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory
) -> None:
    """The HandOffFailed path: S3 does not take a large body (a closed relay), so the fetcher cannot
    hand the page on. The task must wait (no attempt counted, no dead letter) however many times
    that happens, and the page be handed on once S3 is back."""
    base = control_plane.settings(retry_tiers="1s=1000,30s=30000", delivery_limit=3)
    settings = base.model_copy(
        update={
            "s3": base.s3.model_copy(update={"bucket": s3_buckets.create()}),
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=0, fetch_concurrency=4),
            "fetch": FetchSettings(
                allow_hosts="127.0.0.1", permit_wait_s=0.5, delay_jitter=0, inline_body_max_bytes=1024
            ),
        }
    )
    prepare_data_plane(settings)
    endpoint = urlsplit(settings.s3.endpoint_url or "")
    s3_relay = TcpRelay(free_port(), (endpoint.hostname or "127.0.0.1", endpoint.port or 80))  # closed
    through = settings.s3.model_copy(update={"endpoint_url": f"http://127.0.0.1:{s3_relay.port}"})
    outputs = KafkaOutputs(settings, claim_checks=ClaimCheckStore.from_settings(through))
    fetcher = Fetcher(settings, DirectBackend(SsrfGuard(["127.0.0.1"])), outputs)
    runner = TaskRunner(settings, fetcher, ThrottleView(settings))
    probe, topology = JobProbe(settings), Topology(settings.queues)
    with RecordingHost(latency_s=0.01, pad_bytes=5000) as host:
        try:
            with running(runner.consumer()):
                task = _hand_task(settings, host, FIRST)
                limit = settings.queues.delivery_limit
                _eventually(
                    lambda: host.requests[FIRST] > limit + 1, 90, "more failed hand-offs than the limit"
                )
                s3_relay.open()
                _eventually(lambda: len(_raw_pages(settings, task.url)) == 1, 60, "the page handed on")
                time.sleep(1)  # the ack goes with the next pass
        finally:
            asyncio.run_coroutine_threadsafe(fetcher.aclose(), runner.loop).result(30)
            runner.close()
            s3_relay.close()
        fetched = host.requests[FIRST]

    [page] = _raw_pages(settings, task.url)
    events = [e for e in read_topic(settings, settings.topics.fetch_events) if e["url"] == task.url]
    assert page["attempt"] == 1 and page["claim_check"], "a failed hand-off must not count as an attempt"
    assert [(e["outcome"], e["attempt"]) for e in events] == [("ok", 1)]  # failed hand-offs wrote nothing
    assert probe.queue_depth(topology.dead_queue) == 0, "a passing S3 outage dead-lettered the task"
    assert probe.queue_depth(topology.lane_queue("normal")) == 0
    print(f"\nfetched {fetched} times: {fetched - 1} hand-offs refused by S3, then handed on once")
