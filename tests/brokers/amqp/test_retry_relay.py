"""The retry relay hands a delay tier's tasks back to their lanes when due, and loses none if killed.

Against the real broker: the tiers are declared with a TTL far longer than the tasks' due time, so
a task in its lane within the test was handed on by the relay, not dead-lettered by RabbitMQ (which
would also have added an ``x-death`` header, checked absent).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pika
import pytest
from prometheus_client import REGISTRY

from dualplane.brokers import amqp
from dualplane.brokers.amqp.messages import CrawlTask, decode
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.retry_relay import DUE_HEADER, RetryRelay, due_headers, lane_properties, wait_s
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import Settings
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.paths import REPO_ROOT
from tests.support.threads import running

TIERS = "slow=600000"  # the broker's TTL: 10 minutes, so only the relay can bring a task back in time
EVENT_TIMEOUT_S = 120.0  # waits are for events; this only bounds a broken run on a loaded machine


@pytest.mark.unit
def test_a_task_waits_until_its_due_header_never_longer_than_its_tier() -> None:
    now_s = 1_000_000.0
    due = pika.BasicProperties(headers=due_headers(3000, now_s=now_s), timestamp=int(now_s))
    assert wait_s(due, 5000, now_s=now_s) == pytest.approx(3.0)
    assert wait_s(due, 5000, now_s=now_s + 4) == 0.0  # overdue: at once
    assert wait_s(due, 1000, now_s=now_s) == pytest.approx(1.0)  # a clock ahead of ours: the TTL at most
    stamped = pika.BasicProperties(timestamp=int(now_s) - 2)  # deferred without the header
    assert wait_s(stamped, 5000, now_s=now_s) == pytest.approx(3.0)
    assert wait_s(pika.BasicProperties(), 5000, now_s=now_s) == pytest.approx(5.0)


@pytest.mark.unit
def test_a_relayed_task_enters_its_lane_stamped_now_without_dead_letter_headers() -> None:
    tier = pika.BasicProperties(
        content_type="application/json", type="crawl_task", message_id="m1", timestamp=1,
        headers={DUE_HEADER: 5, "x-death": [{"count": 1}], "x-first-death-queue": "t", "trace": "kept"},
    )  # fmt: skip
    lane = lane_properties(tier)
    assert lane.headers == {"trace": "kept"}
    assert (lane.content_type, lane.type, lane.message_id) == ("application/json", "crawl_task", "m1")
    assert lane.delivery_mode == pika.DeliveryMode.Persistent.value and lane.timestamp >= time.time() - 5


def _tasks(count: int) -> list[CrawlTask]:
    return [
        CrawlTask(
            job_id="relay", trace_id=f"t{n}", url=f"http://relay.test/{n}", domain="relay.test", depth=0
        )
        for n in range(count)
    ]


def _publish_due(settings: Settings, tasks: list[CrawlTask], due_in_s: float) -> float:
    """Publish ``tasks`` to the tier, due ``due_in_s`` from now; returns that wall-clock due time."""
    topology = Topology(settings.queues)
    due_s = time.time() + due_in_s
    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        for task in tasks:
            headers = due_headers(int(due_in_s * 1000), now_s=due_s - due_in_s)
            publish(channel, topology.tier_name("slow"), task.priority, task, headers=headers)
    finally:
        connection.close()
    return due_s


def _take_lane(settings: Settings, count: int) -> list[tuple[pika.BasicProperties, bytes]]:
    topology = Topology(settings.queues)
    connection = amqp.connect(settings.amqp)
    taken: list[tuple[pika.BasicProperties, bytes]] = []
    try:
        channel = connection.channel()
        for _ in range(count):
            method, properties, body = channel.basic_get(topology.lane_queue("normal"), auto_ack=True)
            assert method is not None, f"the lane held {len(taken)} tasks, not {count}"
            taken.append((properties, body))
    finally:
        connection.close()
    return taken


def _relayed(tier: str) -> float:
    return REGISTRY.get_sample_value("dualplane_retry_relayed_messages_total", {"queue": tier}) or 0.0


def _wait(condition: object, what: str, timeout_s: float = EVENT_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {timeout_s:.0f} s: {what}"
        time.sleep(0.2)


def _declared(control_plane: ControlPlaneFactory) -> tuple[Settings, JobProbe, Topology]:
    settings = control_plane.settings(retry_tiers=TIERS)
    topology = Topology(settings.queues)
    connection = amqp.connect(settings.amqp)
    try:
        topology.declare(connection.channel())
    finally:
        connection.close()
    return settings, JobProbe(settings), topology


@pytest.mark.integration
def test_a_deferred_task_comes_back_to_its_lane_when_due(control_plane: ControlPlaneFactory) -> None:
    settings, probe, topology = _declared(control_plane)
    tier, lane = topology.tier_name("slow"), topology.lane_queue("normal")
    relay = RetryRelay(settings)
    relayed_before = _relayed(tier)
    with running(relay.consumer):
        _wait(lambda: probe.consumers(tier) == 1, "the relay consumes the tier")
        due_s = _publish_due(settings, _tasks(3), due_in_s=2.0)
        _wait(lambda: probe.queue_depth(lane) == 3, "three tasks back in their lane")
        back_s = time.time()
    assert back_s >= due_s - 0.01, "a task was handed on before it was due"  # never early; late is load
    assert probe.queue_depth(tier) == 0
    assert relay.relayed == 3 and _relayed(tier) == relayed_before + 3
    taken = _take_lane(settings, 3)
    assert sorted(decode(body, CrawlTask).url for _, body in taken) == [t.url for t in _tasks(3)]
    for properties, _ in taken:
        assert not (properties.headers or {}).keys() & {DUE_HEADER, "x-death"}, properties.headers
        assert properties.timestamp >= int(due_s) - 1  # the lane's wait is counted from its return


@pytest.fixture
def relay_process() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(30)


RELAY = (
    "from dualplane.brokers.amqp.retry_relay import RetryRelay\n"
    "from dualplane.core.settings import Settings\n"
    "RetryRelay(Settings.from_env()).run()\n"
)


@pytest.mark.integration
def test_a_relay_killed_holding_tasks_loses_none(
    control_plane: ControlPlaneFactory, relay_process: list[subprocess.Popen[str]]
) -> None:
    """A relay process holds every task of the tier (none ready in it, none in the lane yet) and is
    killed with SIGKILL; a second relay hands each task on, once, when it is due."""
    settings, probe, topology = _declared(control_plane)
    tier, lane = topology.tier_name("slow"), topology.lane_queue("normal")
    process = subprocess.Popen(
        [sys.executable, "-c", RELAY], env={**os.environ, **settings.to_env()}, cwd=REPO_ROOT, text=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    relay_process.append(process)
    _wait(lambda: probe.consumers(tier) == 1, "the relay process consumes the tier")
    tasks = _tasks(20)
    due_s = _publish_due(settings, tasks, due_in_s=20.0)
    _wait(lambda: probe.queue_depth(tier) == 0, "the relay process holds every task")
    held_for_s = due_s - time.time()
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)
    assert held_for_s > 0 and probe.queue_depth(lane) == 0, "the tasks were handed on before the kill"
    _wait(lambda: probe.queue_depth(tier) == len(tasks), "the killed relay's tasks back in the tier")

    with running(RetryRelay(settings).consumer):
        _wait(lambda: probe.queue_depth(lane) == len(tasks), "every task in its lane")
        time.sleep(1.0)  # a duplicate would be published by now: the relay's tick is 0.2 s
        assert probe.queue_depth(lane) == len(tasks) and probe.queue_depth(tier) == 0
    assert time.time() >= due_s
    taken = _take_lane(settings, len(tasks))
    assert sorted(decode(body, CrawlTask).url for _, body in taken) == sorted(t.url for t in tasks)
