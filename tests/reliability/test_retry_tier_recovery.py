"""A delayed retry comes back on time even when the broker could not hand it back at first.

After a RabbitMQ restart the 1 s retry tier held ~40 tasks for minutes (the chaos crawl): a
restarting node recovers its quorum queues before its exchanges, so the tier's at-least-once
dead-letter worker, handed tasks that expired at boot, finds no tasks exchange ("Cannot forward
any dead-letter messages ... does not exist" in the node's log) and tries again only after
``dead_letter_worker_publisher_confirm_timeout``: 3 minutes by default, 5 s on the embedded and
compose stacks (``dualplane/stack/rabbitmq.py``). Which tasks a boot catches depends on its timing,
so the test makes that state on purpose (the tasks exchange absent when the tasks expire, then
declared again) rather than restarting the broker and hoping to hit it.
"""

from __future__ import annotations

import time

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe

pytestmark = pytest.mark.integration

TASKS = 40  # more than the worker takes at once (its prefetch is 32)
ON_TIME_S = 15.0  # 5 s retry plus slack for a loaded machine; RabbitMQ's default retry is 180 s


def test_tasks_that_expired_while_their_lane_was_unreachable_come_back_within_seconds(
    control_plane: ControlPlaneFactory,
) -> None:
    settings = control_plane.settings(retry_tiers="1s=1000")
    topology, probe = Topology(settings.queues), JobProbe(settings)
    tier, lane = topology.tier_name("1s"), topology.lane_queue("normal")
    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        topology.declare(channel)
        channel.exchange_delete(topology.tasks_exchange)  # as at boot: the tier is back, the exchange not yet
        for index in range(TASKS):
            task = CrawlTask(
                job_id="tiers", trace_id=f"t{index}", url=f"http://a.test/{index}", domain="a.test", depth=0
            )
            publish(channel, tier, task.priority, task)
        time.sleep(3)  # every task expired, and found nowhere to go
        assert (probe.queue_depth(tier), probe.queue_depth(lane)) == (0, 0)

        topology.declare(channel)  # the tasks exchange and the lanes' bindings are back
        back = time.monotonic()
        while (arrived := probe.queue_depth(lane)) < TASKS:
            waited_s = time.monotonic() - back
            assert waited_s < ON_TIME_S, (
                f"{arrived} of {TASKS} expired tasks back in the lane after {waited_s:.0f} s"
            )
            time.sleep(0.25)
    finally:
        connection.close()
    assert probe.queue_depth(lane) == TASKS  # each once
