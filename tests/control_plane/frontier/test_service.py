"""The frontier against the real RabbitMQ: dedup, scope, admission caps, backlog, job progress."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import CrawlTask, JobSpec, ReportStage, TaskReport, TaskReports, decode
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier

pytestmark = pytest.mark.integration


@pytest.fixture
def running_frontier(
    control_plane: ControlPlaneFactory, request: pytest.FixtureRequest
) -> Iterator[RunningFrontier]:
    # Indirect parameters override fields per settings section: {"limits": {...}, "frontier": {...}}.
    overrides = getattr(request, "param", {})
    settings = control_plane.settings()
    settings = settings.model_copy(
        update={name: getattr(settings, name).model_copy(update=values) for name, values in overrides.items()}
    )
    running = RunningFrontier(settings).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.slow
# Room for every seed: at the default D_max of 10,000 the frontier rightly stops taking discovery
# once the 10,000 unique tasks are queued, and nothing here fetches them.
@pytest.mark.parametrize("running_frontier", [{"frontier": {"max_outstanding": 20_000}}], indirect=True)
def test_same_10000_urls_seeded_twice_with_variants_yield_exactly_10000_tasks(
    running_frontier: RunningFrontier,
) -> None:
    urls = [f"http://site-{i % 1000}.example/item/{i}?b=2&a=1" for i in range(10_000)]
    variants = [
        url + ("#reviews" if i % 3 == 0 else "&utm_source=news" if i % 3 == 1 else "&gclid=xyz#top")
        for i, url in enumerate(urls)
    ]
    reordered = [url.replace("?b=2&a=1", "?a=1&b=2") for url in urls[:1000]]
    spec = JobSpec(job_id="dedup", obey_robots=False)

    running_frontier.submit(spec, urls)
    running_frontier.submit(spec, variants + reordered)

    progress = running_frontier.wait_progress("dedup", timeout_s=240, seeded=21_000, discovered=10_000)
    assert progress["duplicates"] == 11_000
    assert progress["queued"] == 10_000
    assert running_frontier.lane_depth() == 10_000


def test_scope_rules_and_invalid_urls_are_counted_not_queued(running_frontier: RunningFrontier) -> None:
    spec = JobSpec(
        job_id="scoped",
        allowed_domains=("shop.example",),
        deny_patterns=("/logout",),
        max_depth=2,
        obey_robots=False,
    )
    seeds = [
        "http://shop.example/a",
        "http://www.shop.example/b",
        "http://elsewhere.example/c",
        "http://shop.example/logout",
        "ftp://shop.example/file",
    ]

    running_frontier.submit(spec, seeds)

    running_frontier.wait_progress("scoped", seeded=5, discovered=2, out_of_scope=2, invalid=1, queued=2)


@pytest.mark.parametrize("running_frontier", [{"limits": {"domain_concurrency": 1}}], indirect=True)
def test_domain_admission_caps_outstanding_and_keeps_the_rest_in_the_backlog(
    running_frontier: RunningFrontier,
) -> None:
    cap = running_frontier.frontier.slots_per_domain  # k x P_d = 8 x 1
    spec = JobSpec(job_id="capped", obey_robots=False)
    seeds = [f"http://slow.example/page/{i}" for i in range(cap + 12)]

    running_frontier.submit(spec, seeds)

    running_frontier.wait_progress("capped", discovered=cap + 12, queued=cap, backlog=12)
    assert running_frontier.lane_depth() == cap


def test_job_with_a_page_limit_stops_admitting(running_frontier: RunningFrontier) -> None:
    spec = JobSpec(job_id="limited", max_pages=5, obey_robots=False)

    running_frontier.submit(spec, [f"http://p{i}.example/" for i in range(9)])

    running_frontier.wait_progress("limited", seeded=9, queued=5, over_limit=4)


def test_past_the_shard_limit_admitted_urls_wait_in_the_backlog(control_plane: ControlPlaneFactory) -> None:
    settings = control_plane.settings()
    settings = settings.model_copy(
        update={"frontier": settings.frontier.model_copy(update={"max_outstanding": 5})}
    )
    running = RunningFrontier(settings).start()
    try:
        running.submit(
            JobSpec(job_id="flood", obey_robots=False), [f"http://d{i}.example/" for i in range(300)]
        )
        running.wait_progress("flood", seeded=300, discovered=300, queued=5, backlog=295)
    finally:
        running.stop()

    assert running.lane_depth() == 5  # D_max holds; the other 295 wait in the backlog, none is lost


def test_permits_are_resized_when_a_restarted_frontier_has_a_lower_p_d(
    control_plane: ControlPlaneFactory,
) -> None:
    """A probe's finding: DUALPLANE_LIMIT_DOMAIN_CONCURRENCY lowered from 8 to 1 and the frontier
    restarted left 8 permits in a known domain's queue (its state still said 8, and no throttle
    command came to change it)."""
    base = control_plane.settings()
    spec = JobSpec(job_id="resized", obey_robots=False)
    queue = Topology(base.queues).permits_queue("resize.example")

    def frontier_with(concurrency: int) -> RunningFrontier:
        limits = base.limits.model_copy(update={"domain_concurrency": concurrency})
        return RunningFrontier(base.model_copy(update={"limits": limits})).start()

    first = frontier_with(8)
    try:
        first.submit(spec, ["http://resize.example/a"])
        first.wait_progress("resized", queued=1)
        assert first.queue_depth(queue) == 8
    finally:
        first.stop()
    restarted = frontier_with(1)
    try:
        restarted.submit(spec, ["http://resize.example/b"])
        restarted.wait_progress("resized", queued=2)
        assert wait_for(lambda: restarted.queue_depth(queue) == 1, 10), restarted.queue_depth(queue)
    finally:
        restarted.stop()


def test_a_batch_of_reports_frees_the_slots_of_the_tasks_it_ends(running_frontier: RunningFrontier) -> None:
    """A fetcher's pass reports as one ``TaskReports`` message: each final report in it frees its
    domain's slot, which releases a parked task, and reports for one task count once."""
    cap = running_frontier.frontier.slots_per_domain
    spec = JobSpec(job_id="reported", obey_robots=False)
    running_frontier.submit(spec, [f"http://busy.example/page/{i}" for i in range(cap + 5)])
    running_frontier.wait_progress("reported", queued=cap, backlog=5)

    topology = running_frontier.topology
    connection = amqp.connect(running_frontier.settings.amqp)
    try:
        channel = confirmed_channel(connection)
        tasks = []
        for _ in range(3):
            method, _properties, body = channel.basic_get(topology.lane_queue("normal"), auto_ack=True)
            assert method is not None
            tasks.append(decode(body, CrawlTask))
        stages: tuple[ReportStage, ...] = ("started", "done", "done")  # a repeat must not free a slot
        reports = [_report(task, stage) for task in tasks for stage in stages]
        route = topology.route("busy.example")
        publish(channel, topology.reports_exchange, route, TaskReports(reports=tuple(reports)))
    finally:
        connection.close()

    running_frontier.wait_progress("reported", done=3, backlog=2, queued=cap)


def _report(task: CrawlTask, stage: ReportStage) -> TaskReport:
    return TaskReport(
        task_id=task.task_id, job_id=task.job_id, trace_id=task.trace_id, url=task.url, domain=task.domain,
        stage=stage,
    )  # fmt: skip


def test_a_task_sent_round_a_retry_tier_frees_its_slot_while_it_waits(
    running_frontier: RunningFrontier,
) -> None:
    """A retrying task is not at the site nor in the lanes for its tier's delay (2 min after a
    captcha): its domain's slot goes to a parked task meanwhile, so blocks do not starve the domain."""
    cap = running_frontier.frontier.slots_per_domain
    spec = JobSpec(job_id="retried", obey_robots=False)
    running_frontier.submit(spec, [f"http://blocking.example/page/{i}" for i in range(cap + 2)])
    running_frontier.wait_progress("retried", queued=cap, backlog=2)

    topology = running_frontier.topology
    connection = amqp.connect(running_frontier.settings.amqp)
    try:
        channel = confirmed_channel(connection)
        tasks = []
        for _ in range(2):
            method, _properties, body = channel.basic_get(topology.lane_queue("normal"), auto_ack=True)
            assert method is not None
            tasks.append(decode(body, CrawlTask))
        stages: tuple[ReportStage, ...] = ("started", "retrying")
        reports = [_report(task, stage) for task in tasks for stage in stages]
        publish(
            channel,
            topology.reports_exchange,
            topology.route("blocking.example"),
            TaskReports(reports=tuple(reports)),
        )
    finally:
        connection.close()

    running_frontier.wait_progress("retried", retrying=2, backlog=0, queued=cap)
