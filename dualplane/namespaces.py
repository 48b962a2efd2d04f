"""Private namespaces: one set of brokers shared by runs that must not see each other's work.

:func:`private_namespace` gives settings whose every queue, exchange, topic and consumer group
starts with a prefix; :func:`drop_namespace` removes everything such a run declared, including the
per-domain permit and per-job queues. The demo runs in one (so it never mixes with a user's jobs),
and so do tests and benchmarks that share one stack. :func:`named_namespace` gives the one a user
names (``--namespace demo`` on ``records``, ``report``, ``status`` and ``replay``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from dualplane.brokers import amqp
from dualplane.brokers.amqp.management import queue_stats
from dualplane.brokers.amqp.messages import PRIORITIES
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import topic_configs
from dualplane.core.settings import Settings

NAMESPACED_TOPICS = (
    "pages_raw",
    "fetch_events",
    "records",
    "dead_letters",
    "schemas",
    "throttle_state",
    "profiles",
    "frontier_changelog",
    "job_progress",
    "extracted",
    "records_latest",
    "changes",
)


NAMESPACE_PREFIX = "dualplane-"
NAMESPACE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


def named_namespace(settings: Settings, name: str) -> Settings:
    """The namespace ``name``: every name prefixed ``dualplane-<name>``, the frontier's state in
    ``<DUALPLANE_STACK_DATA_DIR>/<name>/frontier``. ``dualplane demo`` runs in ``demo``."""
    if not NAMESPACE_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is no namespace name: up to 40 lower-case letters, digits and '-'")
    return private_namespace(settings, NAMESPACE_PREFIX + name, settings.stack.data_dir / name / "frontier")


def private_namespace(settings: Settings, prefix: str, data_dir: Path) -> Settings:
    """A copy of ``settings`` whose every queue, exchange, topic and consumer group starts with
    ``prefix``, and whose frontier keeps its state in ``data_dir``."""
    queues = settings.queues.model_copy(
        update={
            "discovery": f"{prefix}.discovery",
            "crawl_tasks": f"{prefix}.tasks",
            "dead_letters": f"{prefix}.dead",
            "throttle_exchange": f"{prefix}.throttle",
            "reports": f"{prefix}.reports",
            "retry_prefix": f"{prefix}.retry",
            "permits_prefix": f"{prefix}.permits",
        }
    )
    topics = settings.topics.model_copy(
        update={name: f"{prefix}.{getattr(settings.topics, name)}" for name in NAMESPACED_TOPICS}
    )
    return settings.model_copy(
        update={
            "queues": queues,
            "topics": topics,
            "kafka": settings.kafka.model_copy(update={"group_prefix": prefix}),
            "frontier": settings.frontier.model_copy(update={"data_dir": data_dir}),
        }
    )


def namespaces_in(topics: Iterable[str]) -> dict[str, int]:
    """The named namespaces among Kafka topic names, with how many topics each has."""
    found: dict[str, int] = {}
    for topic in topics:
        head, dot, _rest = topic.partition(".")
        name = head.removeprefix(NAMESPACE_PREFIX)
        if dot and head.startswith(NAMESPACE_PREFIX) and NAMESPACE_NAME.fullmatch(name):
            found[name] = found.get(name, 0) + 1
    return found


def drop_namespace(settings: Settings) -> None:
    """Delete the namespace's RabbitMQ queues and exchanges and its Kafka topics (best effort)."""
    with suppress(Exception):
        _drop_rabbitmq(settings)
    with suppress(Exception):
        _drop_kafka(settings)


def _drop_rabbitmq(settings: Settings) -> None:
    topology = Topology(settings.queues)
    tiers = [topology.tier_name(tier) for tier, _ in topology.tiers]
    queues = [*topology.frontier_queues, topology.dead_queue, *tiers]
    queues += [topology.lane_queue(priority) for priority in PRIORITIES]
    queues += [stats.name for stats in queue_stats(settings.amqp, settings.queues.permits_prefix)]
    exchanges = [topology.discovery_exchange, topology.tasks_exchange, topology.dead_exchange]
    exchanges += [topology.reports_exchange, topology.throttle_exchange, *tiers]
    exchanges.append(topology.fetch_control_exchange)
    connection = amqp.connect(settings.amqp)
    try:
        for queue in queues:
            with suppress(Exception):
                connection.channel().queue_delete(queue)
        for exchange in exchanges:
            with suppress(Exception):
                connection.channel().exchange_delete(exchange)
    finally:
        connection.close()


def _drop_kafka(settings: Settings) -> None:
    admin = clients.admin(settings.kafka)
    existing = set(admin.list_topics(timeout=10).topics)
    prefix = settings.kafka.group_prefix
    mine = [name for name in existing if name in topic_configs(settings) or name.startswith(f"{prefix}.")]
    if mine:
        for future in admin.delete_topics(mine, operation_timeout=30).values():
            with suppress(Exception):
                future.result()
