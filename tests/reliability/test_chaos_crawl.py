"""A chaos crawl: the sample site (2,000+ pages) crawled by the frontier, two fetchers and two
extractors as processes, while workers are killed with SIGKILL five times and RabbitMQ and Kafka are
each restarted once. Afterwards, from Kafka's and the site's side:

- every reachable page has exactly one committed record (per job and URL), none is lost;
- every admitted task ended done, failed or dead-lettered, and every dead letter has a reason;
- no page was fetched more often than the faults explain (a fetch in flight at a fault is redone);
- a broker restart never touched the workers: each one not killed on purpose kept running.

Faults follow the crawl's progress, up to 250 pages after the previous one landed (less when the
crawl would end first), not a timer: each lands mid-crawl on a slow machine too, and they never
bunch. A broker restart has landed when the broker listens again. Victims are drawn per role in turn
(fetcher, extractor, frontier), so every kind of worker dies at least once. The figures and the
time to finish after the last fault are printed. No politeness delay and 8 requests per host: the
test must stay within CI's budget.

It runs twice: as it is, and under a CPU hog (one busy process per core at the workers' own priority
for the whole crawl), where timeouts, heartbeats and leases meet a starved machine.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.dead_letters import list_dead_letters
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.stack import LocalStack
from tests.support.brokers import BrokerSession
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic
from tests.support.site_log import served_pages

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.slow]

SITE = SiteSpec(seed=21, hosts=4, pages_per_host=480, latency_ms=2)  # 2,032 reachable pages
JOB = "chaos"
FAULT_EVERY_PAGES = 250
# Five kills, one role after another, and the brokers' restarts among them. RabbitMQ's is asked for
# first, early: its graceful stop (rabbitmqctl starting an Erlang VM on a busy machine) took 12 s, and
# the crawl ran on for 900 pages meanwhile, which left the later faults only ~50 pages apart.
PLAN = ("rabbitmq", "fetcher", "extractor", "kafka", "frontier", "fetcher", "extractor")
FIRST_FAULT_AT_PAGES = 50


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    base = control_plane.settings(retry_tiers="1s=1000,5s=5000,30s=30000")
    return base.model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=8, domain_delay_ms=0, fetch_concurrency=32),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0, permit_wait_s=0.5),
        }
    )


class Fleet:
    """The crawl's processes by name; any of them can be killed and is started again at once."""

    NAMES = ("frontier-a", "fetcher-a", "fetcher-b", "extractor-a", "extractor-b")

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        for name in self.NAMES:
            self.start(name)

    def start(self, name: str) -> None:
        service, slot = name.split("-")
        env = {"DUALPLANE_EXTRACT_INSTANCE_ID": f"chaos-{slot}"} if service == "extractor" else {}
        self.workers[name] = self.pipeline.start(service, env=env)

    def kill(self, name: str) -> None:
        self.pipeline.kill(self.workers[name])
        self.start(name)

    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self.workers.items()}

    def dead(self) -> list[str]:
        return [f"{name} (rc {p.returncode})" for name, p in self.workers.items() if p.poll() is not None]


def _when(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


@pytest.fixture(params=[False, True], ids=["plain", "under-a-cpu-hog"])
def cpu_hog(request: pytest.FixtureRequest) -> Iterator[int]:
    """How many busy processes share the machine with the crawl: none, or one per core."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)
    ] if request.param else []  # fmt: skip
    try:
        yield len(hogs)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(10)


class Restart:
    """A broker restart on a thread. It has landed once the restarted broker listens again: the
    workers reconnect and the crawl resumes then, while the stack's own health checks (a handshake,
    the management API, then a status of every service) took up to 30 s more on a loaded machine. So
    the next fault is placed from the moment the port opens, not from when ``restart`` returns."""

    def __init__(self, stack: LocalStack, broker: str) -> None:
        self.broker, self.started = broker, threading.Event()
        self.endpoint = next(service for service in stack.services if service.name == broker).endpoint
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(stack,), name=f"restart-{broker}", daemon=True)
        self.thread.start()

    def _run(self, stack: LocalStack) -> None:
        def progress(service: str, message: str) -> None:
            if message.startswith("started pid"):
                self.started.set()

        try:
            stack.restart(self.broker, progress)
        except BaseException as error:  # reported in the test's thread
            self.error = error
            self.started.set()

    def landed(self, pages: Callable[[], int], timeout_s: float = 180) -> str:
        """Wait until the broker went down and listens again (or the restart failed); say when."""
        asked, deadline = time.monotonic(), time.monotonic() + timeout_s
        while self.error is None and self.endpoint.port_open(0.2) and not self.started.is_set():
            assert time.monotonic() < deadline, (
                f"{self.broker} still listening {timeout_s:.0f} s after its stop"
            )
            time.sleep(0.1)
        down_s, down_at = time.monotonic() - asked, pages()
        self.started.wait(timeout_s)
        while self.error is None and not self.endpoint.port_open(0.2):
            assert time.monotonic() < deadline, f"{self.broker} not listening again within {timeout_s:.0f} s"
            time.sleep(0.1)
        assert self.error is None, f"restarting {self.broker}: {self.error!r}"
        back_s = time.monotonic() - asked - down_s
        return f"down after {down_s:.0f} s at {down_at} pages, back {back_s:.0f} s later"

    def finish(self) -> None:
        self.thread.join(180)
        assert not self.thread.is_alive() and self.error is None, f"restarting {self.broker}: {self.error!r}"


def _fault(
    fault: str,
    fleet: Fleet,
    stack: LocalStack,
    rng: random.Random,
    *,
    restarts: list[Restart],
    pages: Callable[[], int],
) -> str:
    """Land one fault; a broker restart must leave every worker running with its own pid."""
    if fault in ("rabbitmq", "kafka"):
        for earlier in restarts:
            earlier.finish()  # one broker restart at a time
        before = fleet.pids()
        restarts.append(Restart(stack, fault))
        when = restarts[-1].landed(pages)
        assert not fleet.dead(), f"restarting {fault} ended workers: {fleet.dead()}"
        assert fleet.pids() == before
        return f"restart {fault} ({when})"
    victim = rng.choice(sorted(name for name in fleet.workers if name.startswith(fault)))
    fleet.kill(victim)
    return f"kill -9 {victim}"


def _next_fault_at(fetched: int, pages: int, faults_left: int) -> int:
    """Where the next fault lands: ``FAULT_EVERY_PAGES`` further on, or closer if the crawl would end
    before the faults still to come had their share of it."""
    return fetched + min(FAULT_EVERY_PAGES, (pages - fetched) // (faults_left + 1))


def _trace(settings: Settings, urls: list[str], served: Counter[str]) -> str:
    """Where each of ``urls`` got to: the site's answers, its raw pages and its fetch events."""
    raw = [r for r in read_topic(settings, settings.topics.pages_raw) if r["url"] in urls]
    events = [e for e in read_topic(settings, settings.topics.fetch_events) if e["url"] in urls]
    return "\n".join(
        f"{url}: served {served[url]}x; raw pages {[r['fetched_at'] for r in raw if r['url'] == url]}; "
        f"events {[(e['outcome'], e['status'], e['detail']) for e in events if e['url'] == url]}"
        for url in urls
    )


@pytest.mark.timeout(600)
def test_a_crawl_through_kills_and_broker_restarts_loses_nothing_and_records_each_page_once(
    brokers: BrokerSession,
    settings: Settings,
    pipeline: Pipeline,
    cpu_hog: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if brokers.backend != "local":
        pytest.fail(
            "restarting brokers needs the embedded stack: run with DUALPLANE_TEST_BACKEND=local",
            pytrace=False,
        )
    stack, rng, probe = LocalStack(brokers.settings), random.Random(16), JobProbe(settings)
    faults: list[str] = []
    restarts: list[Restart] = []
    with SampleSite(SITE) as site:
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        fleet = Fleet(pipeline)
        started = time.monotonic()
        probe.submit(JobSpec(job_id=JOB, allowed_domains=tuple(domain_of(s) for s in site.seeds)), site.seeds)
        least = FIRST_FAULT_AT_PAGES
        for landed, fault in enumerate(PLAN, start=1):
            _when(lambda n=least: len(served_pages(site)) >= n, 300, f"{least} pages fetched")
            at = f" at {len(served_pages(site))} pages, {time.monotonic() - started:.0f} s"
            faults.append(
                _fault(fault, fleet, stack, rng, restarts=restarts, pages=lambda: len(served_pages(site)))
                + at
            )
            # Counted once the fault has landed (a broker restart takes seconds): faults never bunch.
            least = _next_fault_at(len(served_pages(site)), len(reachable), len(PLAN) - landed)
        last_fault = time.monotonic()
        for restart in restarts:
            restart.finish()
        try:
            progress = probe.wait_finished(JOB, timeout_s=300)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{pipeline.trouble()}") from None
        finished_s = time.monotonic() - last_fault
        served = served_pages(site)
        assert not fleet.dead(), f"workers ended on their own: {fleet.dead()}\n{pipeline.trouble()}"

    records = Counter((r["job_id"], r["url"]) for r in read_topic(settings, settings.topics.records))
    raw_pages = Counter(r["url"] for r in read_topic(settings, settings.topics.pages_raw))
    connection = amqp.connect(settings.amqp)
    letters = list_dead_letters(connection.channel(), Topology(settings.queues))
    connection.close()
    refetched = sum(count - 1 for count in served.values())
    twice = [key for key, count in records.items() if count > 1]
    lost = reachable - {url for _, url in records}
    with capsys.disabled():
        hogged = f" under a CPU hog of {cpu_hog} busy processes" if cpu_hog else ""
        print(f"\nchaos crawl{hogged}: {len(reachable)} reachable pages, "
              f"{sum(records.values())} committed records, "
              f"{len(twice)} duplicates, {len(lost)} lost, {refetched} refetches "
              f"({sum(raw_pages.values()) - len(raw_pages)} pages on pages.raw twice), {len(letters)} dead "
              f"letters; {time.monotonic() - started:.0f} s in all, finished {finished_s:.0f} s after the "
              "last fault")  # fmt: skip
        print("faults: " + "; ".join(faults))
        replaced = pipeline.lines("; replaced it. Its unconfirmed pages")  # a fetcher's broken producer
        print(f"fetchers' Kafka producers replaced: {len(replaced)}", *(line[:200] for line in replaced[:3]))
        print(pipeline.trouble())  # how each service got through them, in CI's output too

    assert not lost, f"{len(lost)} pages without a record:\n{_trace(settings, sorted(lost)[:3], served)}"
    assert {url for _, url in records} == reachable
    assert not twice, f"{len(twice)} pages with more than one committed record, e.g. {twice[:3]}"
    # Every task ended: none queued, running, retrying or held back; each reachable page done.
    assert [int(progress[state]) for state in ("queued", "in_flight", "retrying", "backlog")] == [0] * 4
    assert int(progress["done"]) >= len(reachable), progress
    assert all(letter.reason.strip() for letter in letters)
    # A page fetched again is one whose task was in flight on a killed fetcher or a restarted broker.
    refetching = sum(1 for fault in faults if "fetcher" in fault or "restart" in fault)
    assert max(served.values()) <= 1 + refetching, served.most_common(3)
    assert refetched <= refetching * settings.limits.fetch_concurrency, refetched
