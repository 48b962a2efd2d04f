"""The control consumer against the real RabbitMQ: bad input ends in the dead letters, with reasons."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from dualplane.brokers import amqp
from dualplane.brokers.amqp.consumer import ControlConsumer, Delivery, QueueBinding, wait_for
from dualplane.brokers.amqp.dead_letters import DeadLetter, list_dead_letters, redrive
from dualplane.brokers.amqp.messages import DiscoveredUrl
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import Settings
from tests.support.factories import ControlPlaneFactory
from tests.support.threads import running

pytestmark = pytest.mark.integration


class Recorder:
    """A discovery handler that records what it handled and can be told to fail."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.broken = False

    def __call__(self, delivery: Delivery) -> None:
        if self.broken:
            raise RuntimeError(f"boom on {delivery.message.url}")
        self.handled.append(delivery.message.url)


def _consumer(settings: Settings, handler: Callable[[Delivery], None]) -> ControlConsumer:
    topology = Topology(settings.queues)
    binding = QueueBinding(handler, (DiscoveredUrl,))
    return ControlConsumer(settings, {topology.frontier_queue(0): binding}, name="test-consumer")


def _send(settings: Settings, body: bytes) -> None:
    connection = amqp.connect(settings.amqp)
    channel = confirmed_channel(connection)
    Topology(settings.queues).declare(channel)
    publish(channel, settings.queues.discovery, "0", body)
    connection.close()


def _dead_letters(settings: Settings, expected: int) -> list[DeadLetter]:
    connection = amqp.connect(settings.amqp)
    letters: list[DeadLetter] = []

    def enough() -> bool:
        nonlocal letters
        letters = list_dead_letters(connection.channel(), Topology(settings.queues))
        return len(letters) >= expected

    wait_for(enough, timeout_s=20, interval_s=0.3)
    connection.close()
    return letters


def test_bad_messages_are_dead_lettered_with_readable_reasons(control_plane: ControlPlaneFactory) -> None:
    settings = control_plane.settings()
    recorder = Recorder()
    with running(_consumer(settings, recorder)):
        _send(settings, b"{not json")
        _send(settings, json.dumps({"kind": "discovered", "version": 7, "job_id": "j", "url": "x"}).encode())
        _send(settings, json.dumps({"kind": "discovered", "job_id": "j"}).encode())
        _send(settings, DiscoveredUrl(job_id="j", url="http://fine.example/").encode())
        letters = _dead_letters(settings, 3)
        assert wait_for(lambda: recorder.handled == ["http://fine.example/"], 10)

    reasons = sorted(letter.reason for letter in letters)
    assert len(reasons) == 3
    assert reasons[0].startswith("invalid 'discovered' message: url: Field required")
    assert reasons[1].startswith("malformed JSON")
    assert reasons[2].startswith("unknown version 7 of 'discovered' messages")
    assert {letter.source_queue for letter in letters} == {Topology(settings.queues).frontier_queue(0)}


def test_handler_that_keeps_raising_is_dead_lettered_then_redriven_once_fixed(
    control_plane: ControlPlaneFactory,
) -> None:
    settings = control_plane.settings(handler_max_failures=3)
    recorder = Recorder()
    recorder.broken = True
    with running(_consumer(settings, recorder)):
        _send(settings, DiscoveredUrl(job_id="job-7", url="http://poison.example/").encode())
        _send(settings, DiscoveredUrl(job_id="job-8", url="http://other.example/").encode())
        letters = _dead_letters(settings, 2)
        assert sorted(letter.job_id or "" for letter in letters) == ["job-7", "job-8"]
        assert all(
            letter.reason == f"handler failed 3 times; last error: RuntimeError: boom on http://{host}/"
            for letter, host in zip(
                sorted(letters, key=lambda x: x.job_id or ""),
                ["poison.example", "other.example"],
                strict=True,
            )
        )

        recorder.broken = False  # the bug is fixed; bring job-7's message back
        connection = amqp.connect(settings.amqp)
        channel = confirmed_channel(connection)
        redriven, left = redrive(channel, Topology(settings.queues), lambda letter: letter.job_id == "job-7")
        connection.close()
        assert (redriven, left) == (1, 1)
        assert wait_for(lambda: recorder.handled == ["http://poison.example/"], 10)

    time.sleep(0.5)
    remaining = _dead_letters(settings, 1)
    assert [letter.job_id for letter in remaining] == ["job-8"]


def test_deeply_nested_json_is_dead_lettered_and_dlq_list_and_redrive_survive_it(
    control_plane: ControlPlaneFactory,
) -> None:
    """A probe's finding: 100,000 nested arrays raised RecursionError in the consumer (a reconnect
    loop until the delivery limit), then in ``dlq list`` and ``dlq redrive``."""
    settings = control_plane.settings()
    recorder = Recorder()
    nested = b'{"kind":"discovered","job_id":"deep","url":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with running(_consumer(settings, recorder)):
        _send(settings, nested)
        _send(settings, DiscoveredUrl(job_id="j", url="http://after.example/").encode())
        [letter] = _dead_letters(settings, 1)
        assert wait_for(lambda: recorder.handled == ["http://after.example/"], 10)
        connection = amqp.connect(settings.amqp)
        redriven, left = redrive(confirmed_channel(connection), Topology(settings.queues), lambda _: False)
        connection.close()

    assert letter.reason.startswith("JSON nested 100001 levels deep (at most 32 are accepted)")
    assert (redriven, left) == (0, 1)
