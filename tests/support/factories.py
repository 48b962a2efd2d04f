"""Per-test resources with unique names, removed afterwards, so tests never see each other's data."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from dualplane.brokers import amqp
from dualplane.brokers.kafka import clients
from dualplane.connectors.storage import s3
from dualplane.core.settings import Settings
from dualplane.namespaces import drop_namespace, private_namespace


def unique_name(prefix: str) -> str:
    return f"test-{prefix}-{uuid.uuid4().hex[:10]}"


class KafkaTopicFactory:
    """``create()`` makes a topic with a unique name and waits until it exists; ``close()`` deletes all."""

    def __init__(self, settings: Settings) -> None:
        self.admin: AdminClient = clients.admin(settings.kafka)
        self.created: list[str] = []

    def create(self, prefix: str = "topic", partitions: int = 1, config: dict[str, str] | None = None) -> str:
        name = unique_name(prefix)
        futures = self.admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])
        futures[name].result(timeout=30)
        self.created.append(name)
        # The controller has it; the broker's metadata follows a moment later (KRaft), and a test
        # reading it at once saw "Unknown topic or partition" (0 partitions) once in CI.
        deadline = time.monotonic() + 30
        while len(self.admin.list_topics(name, timeout=10).topics[name].partitions) < partitions:
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {name} created but not in the broker's metadata after 30 s")
            time.sleep(0.05)
        return name

    def close(self) -> None:
        if self.created:
            for future in self.admin.delete_topics(self.created, operation_timeout=30).values():
                with suppress(Exception):
                    future.result(timeout=30)


class KafkaClientFactory:
    """Producers and consumers on the session's cluster; consumers get unique groups and are closed."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.consumers: list[Consumer] = []
        self.groups: list[str] = []

    def group(self) -> str:
        name = unique_name("group")
        self.groups.append(name)
        return name

    def producer(self, **overrides: Any) -> Producer:
        return clients.producer(self.settings.kafka, **overrides)

    def consumer(self, group_id: str | None = None, **overrides: Any) -> Consumer:
        consumer = clients.consumer(self.settings.kafka, group_id or self.group(), **overrides)
        self.consumers.append(consumer)
        return consumer

    def close(self) -> None:
        for consumer in self.consumers:
            with suppress(Exception):
                consumer.close()
        if self.groups:
            admin = clients.admin(self.settings.kafka)
            for future in admin.delete_consumer_groups(self.groups, request_timeout=10).values():
                with suppress(Exception):
                    future.result()


class AmqpQueueFactory:
    """Quorum queues with unique names on a fresh connection; deleted with the connection closed."""

    def __init__(self, settings: Settings) -> None:
        self.connection = amqp.connect(settings.amqp)
        self.channel = self.connection.channel()
        self.created: list[str] = []

    def create(self, prefix: str = "queue", **arguments: Any) -> str:
        name = unique_name(prefix)
        self.channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum", **arguments})
        self.created.append(name)
        return name

    def close(self) -> None:
        with suppress(Exception):
            for name in self.created:
                self.channel.queue_delete(name)
        with suppress(Exception):
            self.connection.close()


class S3BucketFactory:
    """Buckets with unique names, emptied and deleted afterwards."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client = s3.client(settings.s3)
        self.created: list[str] = []

    def create(self) -> str:
        name = unique_name("bucket")
        s3.ensure_bucket(self.settings.s3, name)
        self.created.append(name)
        return name

    def close(self) -> None:
        for bucket in self.created:
            with suppress(Exception):
                for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                    for item in page.get("Contents", []):
                        self.client.delete_object(Bucket=bucket, Key=item["Key"])
                self.client.delete_bucket(Bucket=bucket)


def closing(factory: Any) -> Iterator[Any]:
    """Fixture body: hand out ``factory`` and close it afterwards, whatever the test did."""
    try:
        yield factory
    finally:
        factory.close()


class ControlPlaneFactory:
    """Settings whose every RabbitMQ name is unique to the test; ``close()`` deletes what was declared."""

    def __init__(self, settings: Settings, tmp_path: Path) -> None:
        self.base = settings
        self.tmp_path = tmp_path
        self.made: list[Settings] = []

    def settings(self, **queue_overrides: Any) -> Settings:
        prefix = unique_name("cp")
        made = private_namespace(self.base, prefix, self.tmp_path / prefix / "frontier")
        made = made.model_copy(
            update={
                "queues": made.queues.model_copy(update=queue_overrides),
                "topics": made.topics.model_copy(update={"partitions": 3}),
            }
        )
        self.made.append(made)
        return made

    def close(self) -> None:
        for settings in self.made:
            drop_namespace(settings)
