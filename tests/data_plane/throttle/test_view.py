"""ThrottleView against the real exchange and compacted topic: live commands, overrides, restarts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta

import pika
import pytest
from confluent_kafka import Producer

from dualplane.brokers import amqp
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle.commands import ThrottleCommand
from dualplane.data_plane.throttle.publisher import CommandPublisher
from dualplane.data_plane.throttle.view import ThrottleView, load_latest_state, read_latest_commands
from tests.support.factories import ControlPlaneFactory

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@dataclass
class Processor:
    """Issues commands the way the throttle processor does: compacted topic first, then the fanout."""

    settings: Settings
    producer: Producer
    publisher: CommandPublisher

    def issue(self, command: ThrottleCommand, *, to_topic: bool = True) -> None:
        if to_topic:
            topic = self.settings.topics.throttle_state
            self.producer.produce(topic, command.to_avro(), key=command.state_key.encode())
            assert self.producer.flush(10) == 0
        self.publisher.submit(command)
        assert self.publisher.wait_idle(10), self.publisher.stats


@pytest.fixture
def processor(control_plane: ControlPlaneFactory) -> Iterator[Processor]:
    settings = control_plane.settings()
    ensure_data_plane_topics(settings)
    publisher = CommandPublisher.from_settings(settings.amqp, settings.queues.throttle_exchange)
    publisher.start()
    yield Processor(settings, clients.producer(settings.kafka), publisher)
    publisher.close()


def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> float:
    """Seconds until ``check()`` held; fails after ``timeout_s``."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout_s, "condition not reached in time"
        time.sleep(0.005)
    return time.monotonic() - started


def test_view_applies_commands_and_overrides_and_restarts_from_the_compacted_topic(
    processor: Processor,
) -> None:
    settings = processor.settings
    defaults = (settings.limits.domain_concurrency, settings.limits.domain_delay_ms, False)
    with ThrottleView(settings) as view:
        assert view.limits("a.test") == defaults

        halve = ThrottleCommand(domain="a.test", concurrency=1, delay_ms=4000, reason="halve: test")
        started = time.monotonic()
        processor.issue(halve)
        eventually(lambda: view.limits("a.test") == (1, 4000, False))
        print(
            f"\ncommand applied by the view {(time.monotonic() - started) * 1000:.0f} ms after it was issued"
        )
        assert view.details("a.test").reason == "halve: test"

        override = ThrottleCommand(
            domain="a.test", concurrency=3, delay_ms=100, source="operator", ttl_s=2, reason="operator: test"
        )
        processor.issue(override)
        eventually(lambda: view.limits("a.test") == (3, 100, False))
        assert view.details("a.test").source == "operator"
        eventually(lambda: view.limits("a.test") == (1, 4000, False), timeout_s=5)  # the override expired

        stale = halve.model_copy(
            update={"concurrency": 7, "issued_at": halve.issued_at - timedelta(minutes=1)}
        )
        processor.issue(stale, to_topic=False)
        time.sleep(0.5)
        assert view.limits("a.test") == (1, 4000, False), "an older command must not win"

    # A restarted fetcher: the current limits come from the compacted topic, no new message needed.
    with ThrottleView(settings) as restarted:
        assert restarted.limits("a.test") == (1, 4000, False)
        assert restarted.limits("other.test") == defaults
    assert load_latest_state(settings.kafka, settings.topics.throttle_state) == {"a.test": halve}
    keys = set(read_latest_commands(settings.kafka, settings.topics.throttle_state))
    assert keys == {"a.test", "a.test@operator"}


def test_a_pause_ends_on_time_without_the_processor(processor: Processor) -> None:
    settings = processor.settings
    pause = ThrottleCommand(
        domain="p.test", concurrency=1, delay_ms=9000, paused=True, ttl_s=1, reason="pause"
    )
    changes: list[tuple[str, tuple[int, int, bool]]] = []
    with ThrottleView(
        settings, on_change=lambda domain, limits: changes.append((domain, limits.as_tuple()))
    ) as view:
        processor.issue(pause)
        eventually(lambda: view.limits("p.test") == (1, 9000, True))
        assert changes == [("p.test", (1, 9000, True))]
        eventually(lambda: view.limits("p.test") == (1, 9000, False), timeout_s=3)


def test_view_survives_garbage_on_the_exchange(processor: Processor) -> None:
    settings = processor.settings
    with ThrottleView(settings) as view:
        connection = amqp.connect(settings.amqp)
        channel = connection.channel()
        for body in (b"{", b'{"kind":"task"}', b'{"kind":"throttle","domain":"x.test"}'):
            channel.basic_publish(settings.queues.throttle_exchange, "", body, pika.BasicProperties())
        connection.close()
        good = ThrottleCommand(domain="x.test", concurrency=2, delay_ms=10, reason="after garbage")
        processor.issue(good)
        eventually(lambda: view.limits("x.test") == (2, 10, False))


def test_publisher_rides_out_a_rabbitmq_outage_and_sends_only_the_newest_per_domain(
    processor: Processor,
) -> None:
    settings = processor.settings
    exchange = settings.queues.throttle_exchange
    connection = amqp.connect(settings.amqp)
    channel = connection.channel()
    channel.exchange_declare(exchange, "fanout", durable=True)
    queue = channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
    channel.queue_bind(queue, exchange)
    attempts: list[float] = []

    def flaky_connect() -> pika.BlockingConnection:
        attempts.append(time.monotonic())
        if len(attempts) <= 2:
            raise pika.exceptions.AMQPConnectionError("RabbitMQ away (test)")
        return amqp.connect(settings.amqp)

    publisher = CommandPublisher(exchange, flaky_connect)
    for domain, concurrency in (("a.test", 4), ("b.test", 3), ("a.test", 2)):
        publisher.submit(ThrottleCommand(domain=domain, concurrency=concurrency, delay_ms=1, reason="test"))
    publisher.start()
    try:
        assert publisher.wait_idle(20), publisher.stats
        assert (publisher.stats.failures, publisher.stats.published, len(attempts)) == (2, 2, 3)
        received = []
        while (message := channel.basic_get(queue, auto_ack=True))[0] is not None:
            received.append(ThrottleCommand.from_json(message[2]))
        assert sorted((c.domain, c.concurrency) for c in received) == [("a.test", 2), ("b.test", 3)]
    finally:
        publisher.close()
        connection.close()
