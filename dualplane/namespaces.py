"""Private namespaces: every queue, exchange and topic of settings made by ``with_private_names``.

Tests and benchmarks share one stack by giving each run its own names; ``drop_namespace`` removes
everything such a run declared, including the per-domain permit and per-job queues.
"""

from __future__ import annotations

from contextlib import suppress

from control_plane import amqp
from control_plane.amqp.management import queue_stats
from control_plane.amqp.messages import PRIORITIES
from control_plane.amqp.topology import Topology
from data_plane.kafka import clients
from data_plane.kafka.topics import topic_configs
from dualplane.core.settings import Settings


def drop_namespace(settings: Settings) -> None:
    """Delete the namespace's RabbitMQ queues and exchanges and its Kafka topics (best effort)."""
    with suppress(Exception):
        _drop_rabbitmq(settings)
    with suppress(Exception):
        _drop_kafka(settings)


def _drop_rabbitmq(settings: Settings) -> None:
    topology = Topology(settings.queues)
    tiers = [topology.tier_name(tier) for tier, _ in topology.tiers]
    queues = [topology.discovery_queue, topology.reports_queue, topology.dead_queue, *tiers]
    queues += [topology.lane_queue(priority) for priority in PRIORITIES]
    for prefix in (settings.queues.permits_prefix, settings.queues.jobs_prefix):
        queues += [stats.name for stats in queue_stats(settings.amqp, prefix)]
    exchanges = [topology.discovery_exchange, topology.tasks_exchange, topology.dead_exchange]
    exchanges += [topology.reports_exchange, topology.throttle_exchange, *tiers]
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
