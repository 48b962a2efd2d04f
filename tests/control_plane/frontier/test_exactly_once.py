"""A frontier that dies between its changelog commit and its RabbitMQ commit issues each task once.

The crash is made to land exactly there (not on a timer): the consumer's RabbitMQ commit is
replaced, once, by a lost connection, after the frontier has written the pass to its changelog and
to SQLite. The broker then discards the uncommitted publishes and acks and delivers the messages
again, to the same frontier (reconnected) or to a new one on an empty data directory (another
machine). Either way the lanes must end up holding exactly one task per URL, with the same ids the
changelog recorded. Against the real RabbitMQ and Kafka.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.consumer import ControlConsumer, wait_for
from dualplane.brokers.amqp.messages import DiscoveredBatch, JobSpec, new_id
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.core.settings import Settings
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier

pytestmark = pytest.mark.integration

URLS = [f"http://exact-{i % 7}.example/page/{i}" for i in range(60)]


class CrashOnce:
    """Replaces the consumer's commit, once a pass has something to commit: the pass's changelog
    and SQLite commit happen (before_commit), then the connection is lost instead of tx.commit."""

    def __init__(self) -> None:
        self.armed = False
        self.crashed = False
        self.original = ControlConsumer.commit

    def __call__(self, consumer: ControlConsumer) -> None:
        tx = consumer.tx
        if not self.armed or self.crashed or tx is None or consumer.before_commit is None:
            self.original(consumer)
            return
        if not consumer.before_commit(consumer) or not tx.uncommitted:
            return
        self.crashed = True
        assert consumer.connection is not None
        consumer.connection.close()  # the broker discards the transaction; unacked messages return
        raise pika.exceptions.StreamLostError("crash between the changelog commit and the RabbitMQ commit")


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings()


@pytest.fixture
def crash(monkeypatch: pytest.MonkeyPatch) -> Iterator[CrashOnce]:
    crash = CrashOnce()

    def commit(consumer: ControlConsumer) -> None:  # a plain function, so it binds as a method
        crash(consumer)

    monkeypatch.setattr(ControlConsumer, "commit", commit)
    yield crash


def _send_seeds(settings: Settings, job_id: str, urls: list[str]) -> None:
    """The seeds alone (the job is known already), as ``dualplane crawl`` sends them."""
    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        batch = DiscoveredBatch(job_id=job_id, urls=tuple(urls), seed=True)
        publish(channel, settings.queues.discovery, "0", batch, message_id=new_id())
    finally:
        connection.close()


def _lane_tasks(settings: Settings, running: RunningFrontier) -> list[dict[str, object]]:
    """Every task in the normal lane (read without consuming: got, then all requeued)."""
    connection = amqp.connect(settings.amqp)
    try:
        channel = connection.channel()
        tasks = []
        while True:
            method, _properties, body = channel.basic_get(running.topology.lane_queue("normal"))
            if method is None:
                return tasks
            tasks.append(json.loads(body))
    finally:
        connection.close()  # unacked: back in the queue


@pytest.mark.parametrize("takeover", ["same process", "new process on an empty data directory"])
def test_each_url_becomes_one_task_when_the_frontier_dies_between_its_two_commits(
    settings: Settings, crash: CrashOnce, tmp_path: Path, takeover: str
) -> None:
    running = RunningFrontier(settings).start()
    replacement = None
    frontiers = [running]
    try:
        running.submit(JobSpec(job_id="exactly", obey_robots=False), [])
        running.wait_progress("exactly", seeded=0)
        crash.armed = True  # the next commit with anything in it is the seeds' pass: it issues tasks
        _send_seeds(settings, "exactly", URLS)
        assert wait_for(lambda: crash.crashed, 30), "the crash never happened"
        if takeover != "same process":
            frontiers.remove(running)
            running.stop()  # its connection is gone; a frontier elsewhere takes the shard over
            moved = settings.model_copy(
                update={"frontier": settings.frontier.model_copy(update={"data_dir": tmp_path / "elsewhere"})}
            )
            replacement = RunningFrontier(moved).start()
            frontiers.append(replacement)
        expected = {"seeded": len(URLS), "discovered": len(URLS), "queued": len(URLS)}
        running.wait_progress("exactly", timeout_s=60, **expected)
        tasks = _lane_tasks(settings, running)
    finally:
        for frontier in frontiers:
            frontier.stop()

    per_url = Counter(str(task["url"]) for task in tasks)
    assert len(per_url) == len(URLS)
    assert set(per_url.values()) == {1}, f"tasks issued twice: {[u for u, n in per_url.items() if n > 1]}"
    assert len({task["task_id"] for task in tasks}) == len(URLS)
