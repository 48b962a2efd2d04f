"""A fetcher answers a broadcast cancel only once none of the job's fetches runs on it."""

from __future__ import annotations

import threading

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.fetch_control import confirm_cancel, fetchers_running
from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.fetcher.cancelling import FetcherCancels
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.control_plane.fetcher.runner import FetchResult, TaskRunner
from dualplane.core.jobs import NoCancels
from dualplane.data_plane.throttle.view import ThrottleView
from tests.support.factories import ControlPlaneFactory


@pytest.mark.unit
def test_a_cancel_heard_with_nothing_running_is_answered_at_once() -> None:
    cancels = FetcherCancels(NoCancels())

    assert cancels.heard_cancel("j", ("reply", "c1")) == [("reply", "c1")]
    assert cancels.cancelled("j") and not cancels.cancelled("other")


@pytest.mark.unit
def test_the_answer_waits_for_the_jobs_last_running_fetch() -> None:
    cancels = FetcherCancels(NoCancels())
    cancels.started("j")
    cancels.started("j")
    cancels.started("other")

    assert cancels.heard_cancel("j", ("reply", "c1")) == []
    assert cancels.ended("other") == []
    assert cancels.ended("j") == []
    assert cancels.ended("j") == [("reply", "c1")]


@pytest.mark.unit
def test_a_new_connection_forgets_running_fetches_and_answers_owed() -> None:
    cancels = FetcherCancels(NoCancels())
    cancels.started("j")
    cancels.heard_cancel("j", ("reply", "c1"))

    cancels.reset()

    assert cancels.cancelled("j")  # still cancelled: the broadcast is not forgotten
    assert cancels.heard_cancel("j", ("reply", "c2")) == [("reply", "c2")]


@pytest.mark.integration
def test_a_running_fetcher_answers_a_broadcast_cancel_and_ignores_garbage(
    control_plane: ControlPlaneFactory,
) -> None:
    settings = control_plane.settings(frontier_shards=1)

    async def work(task: CrawlTask) -> FetchResult:
        return FetchResult(Outcome.OK)

    runner = TaskRunner(settings, work, ThrottleView(settings), cancels=NoCancels())
    consumer = runner.consumer()
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    connection = amqp.connect(settings.amqp)
    try:
        channel = connection.channel()
        topology = Topology.declared(settings.queues, channel)
        assert wait_for(lambda: fetchers_running(channel, topology) == 1, 30, 0.2)
        generation = consumer.generation
        channel.basic_publish(topology.fetch_control_exchange, "", b"not a cancel")

        assert confirm_cancel(connection, topology, "j", timeout_s=15) == (1, 1)
        assert consumer.generation == generation  # the garbage did not cost it its connection
        assert runner.stopping.cancelled("j")
    finally:
        connection.close()
        consumer.stop()
        thread.join(15)
        runner.close()
