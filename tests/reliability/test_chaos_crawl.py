"""A chaos crawl: the sample site (2,000+ pages) crawled by the frontier, two fetchers and two
extractors as processes, while workers are killed with SIGKILL five times and RabbitMQ and Kafka are
each restarted once. Afterwards, from Kafka's and the site's side:

- every reachable page has exactly one committed record (per job and URL), none is lost;
- every admitted task ended done, failed or dead-lettered, and every dead letter has a reason;
- no page was fetched more often than the faults explain (a fetch in flight at a fault is redone).

Faults follow the crawl's progress (every ~250 pages), not a timer, so each lands mid-crawl on a
slow machine too. The figures and the time to finish after the last fault are printed.
"""

from __future__ import annotations

import random
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from control_plane import amqp
from control_plane.amqp.dead_letters import list_dead_letters
from control_plane.amqp.messages import JobSpec
from control_plane.amqp.topology import Topology
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.stack import LocalStack
from tests.support.brokers import BrokerSession
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.slow]

SITE = SiteSpec(seed=21, hosts=4, pages_per_host=480, latency_ms=2)  # 2,032 reachable pages
JOB = "chaos"
KILLS = 5
FAULT_EVERY_PAGES = 250


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    base = control_plane.settings(retry_tiers="1s=1000,5s=5000,30s=30000")
    return base.model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=4, domain_delay_ms=0, fetch_concurrency=32),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0, permit_wait_s=0.5),
        }
    )


class Fleet:
    """The crawl's processes by role; any worker can be killed and is started again at once."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        pipeline.start("frontier")
        for name in ("fetcher-a", "fetcher-b", "extractor-a", "extractor-b"):
            self.start(name)

    def start(self, name: str) -> None:
        service, slot = name.split("-")
        env = {"DUALPLANE_EXTRACT_INSTANCE_ID": f"chaos-{slot}"} if service == "extractor" else {}
        self.workers[name] = self.pipeline.start(service, env=env)

    def kill(self, name: str) -> None:
        self.pipeline.kill(self.workers[name])
        self.start(name)


def _served(site: SampleSite) -> Counter[str]:
    served: Counter[str] = Counter()
    for host, base in enumerate(site.urls):
        for entry in site.log(host):
            if entry.status == 200 and entry.path != "/robots.txt" and not entry.path.startswith("/_"):
                served[canonicalize(base + entry.path)] += 1
    return served


def _when(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


@pytest.fixture
def pipeline(settings: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    made = Pipeline(settings, tmp_path)
    yield made
    made.stop_all()


@pytest.mark.timeout(900)
def test_a_crawl_through_kills_and_broker_restarts_loses_nothing_and_records_each_page_once(
    brokers: BrokerSession, settings: Settings, pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    if brokers.backend != "local":
        pytest.skip("restarting brokers needs the embedded stack (DUALPLANE_TEST_BACKEND=local)")
    stack, rng, probe = LocalStack(brokers.settings), random.Random(16), JobProbe(settings)
    faults: list[str] = []
    with SampleSite(SITE) as site:
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        fleet = Fleet(pipeline)
        started = time.monotonic()
        probe.submit(JobSpec(job_id=JOB, allowed_domains=tuple(domain_of(s) for s in site.seeds)), site.seeds)
        plan = [*(["kill"] * KILLS)]
        plan.insert(2, "rabbitmq")
        plan.insert(5, "kafka")
        for step, fault in enumerate(plan, start=1):
            _when(
                lambda s=step: len(_served(site)) >= s * FAULT_EVERY_PAGES, 300, f"{step * 250} pages fetched"
            )
            if fault == "kill":
                victim = rng.choice(sorted(fleet.workers))
                fleet.kill(victim)
                faults.append(f"kill -9 {victim} at {len(_served(site))} pages")
            else:
                stack.restart(fault)
                faults.append(f"restart {fault} at {len(_served(site))} pages")
        last_fault = time.monotonic()
        try:
            progress = probe.wait_finished(JOB, timeout_s=420)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{pipeline.trouble()}") from None
        finished_s = time.monotonic() - last_fault
        served = _served(site)

    records = Counter((r["job_id"], r["url"]) for r in read_topic(settings, settings.topics.records))
    raw_pages = Counter(r["url"] for r in read_topic(settings, settings.topics.pages_raw))
    connection = amqp.connect(settings.amqp)
    letters = list_dead_letters(connection.channel(), Topology(settings.queues))
    connection.close()
    refetched = sum(count - 1 for count in served.values())
    with capsys.disabled():
        print(f"\nchaos crawl: {len(reachable)} reachable pages, {sum(records.values())} committed records, "
              f"{sum(raw_pages.values()) - len(raw_pages)} pages on pages.raw twice, {refetched} refetches, "
              f"{len(letters)} dead letters; {time.monotonic() - started:.0f} s in all, finished "
              f"{finished_s:.0f} s after the last fault")  # fmt: skip
        print("faults: " + "; ".join(faults))
        print(pipeline.trouble())

    lost = reachable - {url for _, url in records}
    assert not lost, f"{len(lost)} pages without a record, e.g. {sorted(lost)[:3]}"
    assert {url for _, url in records} == reachable
    twice = [key for key, count in records.items() if count > 1]
    assert not twice, f"{len(twice)} pages with more than one committed record, e.g. {twice[:3]}"
    # Every task ended: none queued, running, retrying or held back; each reachable page done.
    assert [int(progress[state]) for state in ("queued", "in_flight", "retrying", "backlog")] == [0] * 4
    assert int(progress["done"]) >= len(reachable), progress
    assert all(letter.reason.strip() for letter in letters)
    # A page fetched again is one whose task was in flight on a killed fetcher or a restarted broker.
    faults_on_fetches = sum(1 for fault in faults if "fetcher" in fault or "restart" in fault)
    assert max(served.values()) <= 1 + faults_on_fetches, served.most_common(3)
    assert refetched <= faults_on_fetches * settings.limits.fetch_concurrency, refetched
