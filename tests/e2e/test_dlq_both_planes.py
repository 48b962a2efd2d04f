"""``dlq list | show`` read both planes' dead letters, with the same filters: RabbitMQ's (a task that
failed) and Kafka's (a page the extractor could not handle), against the real brokers."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from dualplane import schemas
from dualplane.brokers import amqp
from dualplane.brokers.amqp.dead_letters import REASON, SOURCE_QUEUE
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka import clients
from dualplane.core.settings import Settings
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory, KafkaTopicFactory

pytestmark = [pytest.mark.e2e]


def _amqp_letter(settings: Settings, job_id: str, url: str, reason: str) -> None:
    connection = amqp.connect(settings.amqp)
    channel = confirmed_channel(connection)
    topology = Topology(settings.queues)
    topology.declare(channel)
    body = json.dumps({"kind": "task", "job_id": job_id, "url": url}).encode()
    publish(channel, topology.dead_exchange, "", body, headers={REASON: reason, SOURCE_QUEUE: "tasks.normal"})
    connection.close()


def _kafka_letter(settings: Settings, job_id: str, url: str, reason: str) -> None:
    letter = {
        "source_topic": settings.topics.pages_raw, "source_partition": 0, "source_offset": 41,
        "key": url.encode(), "payload": b"\x00", "reason": reason, "stage": "extract",
        "failed_at": datetime(2026, 12, 7, 8, 0, tzinfo=UTC), "job_id": job_id, "trace_id": None,
    }  # fmt: skip
    producer = clients.producer(settings.kafka)
    producer.produce(settings.topics.dead_letters, schemas.encode("dead_letter", letter), key=url.encode())
    assert producer.flush(30) == 0


def test_dlq_lists_and_shows_both_planes_with_one_set_of_filters(
    control_plane: ControlPlaneFactory, kafka_topics: KafkaTopicFactory
) -> None:
    settings = control_plane.settings()
    settings = settings.model_copy(
        update={"topics": settings.topics.model_copy(update={"dead_letters": kafka_topics.create("dlq")})}
    )
    _amqp_letter(settings, "job-a", "http://shop.example/a", "robots.txt disallows it")
    _amqp_letter(settings, "job-b", "http://shop.example/b", "5 attempts: server_error")
    _kafka_letter(settings, "job-a", "http://shop.example/c", "no extractor plugin 'reviews'")
    env = settings.to_env()

    both = run_cli("dlq", "list", "--json", env=env)
    assert both.exit_code == 0, both.stderr
    assert sorted(letter["url"] for letter in both.json()) == [
        "http://shop.example/a", "http://shop.example/b", "http://shop.example/c"
    ]  # fmt: skip

    job_a = run_cli("dlq", "list", "--job", "job-a", "--json", env=env).json()
    assert sorted((letter["id"].split(":")[0], letter["url"]) for letter in job_a) == [
        ("amqp", "http://shop.example/a"), ("kafka", "http://shop.example/c")
    ]  # fmt: skip
    plugin = run_cli("dlq", "list", "--reason", "plugin", "--kind", "kafka", "--json", env=env).json()
    assert [letter["stage"] for letter in plugin] == ["extract"]
    by_url = run_cli("dlq", "list", "--url", "http://shop.example/b", "--json", env=env).json()
    assert [letter["reason"] for letter in by_url] == ["5 attempts: server_error"]

    shown = run_cli("dlq", "show", plugin[0]["id"], "--json", env=env)
    assert shown.exit_code == 0, shown.stderr
    assert shown.json()["source"] == f"{settings.topics.pages_raw}[0]@41"
    assert (
        shown.json()["redrive"] == "dualplane replay --from-offset 0:41 --to-offset 0:42 --schema-version 3"
    )
    missing = run_cli("dlq", "show", "kafka:0:999", env=env)
    assert missing.exit_code == 1 and "dlq list" in missing.stderr
