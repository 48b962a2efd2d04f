"""Operator overrides: issued like the processor's commands, read back from the compacted topic.

An override is a :class:`~data_plane.throttle.commands.ThrottleCommand` with ``source="operator"``.
:func:`issue` writes it to the compacted ``throttle.state`` topic (key ``<domain>@operator``, Avro),
waiting for Kafka's acknowledgement, and then publishes it on the throttle fanout with a publisher
confirm: running fetchers and the frontier apply it at once, and processes started later read it
from the topic. It wins over the processor's limits until its ``ttl_s`` runs out (see
:mod:`data_plane.throttle.limits`); :func:`clearing` makes the command that ends one now.

Settings: ``DUALPLANE_TOPIC_THROTTLE_STATE``, ``DUALPLANE_QUEUE_THROTTLE_EXCHANGE``, ``DUALPLANE_KAFKA_*``,
``DUALPLANE_AMQP_*``.
"""

from __future__ import annotations

from datetime import datetime

from confluent_kafka import KafkaException
from pika.exceptions import AMQPError

from dualplane.brokers import amqp
from dualplane.brokers.amqp.publisher import confirmed_channel, publish
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import topic_configs
from dualplane.core.clock import utc_now
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle.commands import AUTO, OPERATOR, ThrottleCommand
from dualplane.data_plane.throttle.exceptions import ThrottleError
from dualplane.data_plane.throttle.view import read_latest_commands

TIMEOUT_S = 15.0


def issue(settings: Settings, command: ThrottleCommand) -> None:
    """Make ``command`` durable in the compacted topic, then announce it on the throttle exchange.

    Kafka first, as the processor does, so every command a process obeys is also there for
    processes that start later. :class:`ThrottleError` says which broker refused and what to check.
    """
    _write_state(settings, command)
    _announce(settings, command)


def clearing(settings: Settings, domain: str, reason: str) -> ThrottleCommand:
    """The override that ends ``domain``'s current one: expired on arrival (``ttl_s=0``)."""
    limits = settings.limits
    return ThrottleCommand(
        domain=domain,
        concurrency=limits.domain_concurrency,
        delay_ms=limits.domain_delay_ms,
        source=OPERATOR,
        ttl_s=0,
        reason=reason,
    )


def active_overrides(settings: Settings, now: datetime | None = None) -> list[ThrottleCommand]:
    """Unexpired non-processor commands in the compacted topic, by domain."""
    return latest_state(settings, now)[1]


def latest_state(
    settings: Settings, now: datetime | None = None
) -> tuple[list[ThrottleCommand], list[ThrottleCommand]]:
    """From the brokers, wherever this runs: the processor's latest command per domain, and the
    unexpired overrides, each by domain (one read of the compacted topic)."""
    now = now or utc_now()
    topic = settings.topics.throttle_state
    try:
        latest = read_latest_commands(settings.kafka, topic, timeout_s=TIMEOUT_S)
    except (KafkaException, TimeoutError) as error:
        raise ThrottleError(
            f"could not read {topic!r} from Kafka at {settings.kafka.bootstrap_servers} ({error}); "
            "is Kafka up (`dualplane stack status`) and DUALPLANE_KAFKA_BOOTSTRAP_SERVERS right?"
        ) from error
    processor = sorted((c for c in latest.values() if c.source == AUTO), key=lambda c: c.domain)
    found = [c for c in latest.values() if c.source != AUTO and not c.expired(now)]
    return processor, sorted(found, key=lambda command: command.domain)


def _write_state(settings: Settings, command: ThrottleCommand) -> None:
    topic = settings.topics.throttle_state
    where = f"Kafka at {settings.kafka.bootstrap_servers}"
    try:
        clients.ensure_topics(
            settings.kafka, [topic], partitions=1, config=topic_configs(settings)[topic], timeout_s=TIMEOUT_S
        )
        why = clients.produce_acked(
            settings.kafka, topic, command.state_key.encode(), command.to_avro(), TIMEOUT_S
        )
    except (KafkaException, RuntimeError) as error:
        raise ThrottleError(f"could not write the override to {topic!r} on {where}: {error}") from error
    if why is not None:
        raise ThrottleError(
            f"{where} did not take the override for {command.domain} ({why}); nothing was announced. "
            "Is Kafka up (`dualplane stack status`)?"
        )


def _announce(settings: Settings, command: ThrottleCommand) -> None:
    exchange = settings.queues.throttle_exchange
    try:
        connection = amqp.connect(settings.amqp)
    except (AMQPError, OSError) as error:
        raise ThrottleError(
            f"the override for {command.domain} is in {settings.topics.throttle_state!r}, but RabbitMQ did "
            f"not answer ({error!r}): running fetchers apply it after their next reconnect; check "
            "DUALPLANE_AMQP_URL and `dualplane stack status`, then run the command again"
        ) from error
    try:
        channel = confirmed_channel(connection)
        channel.exchange_declare(exchange, "fanout", durable=True)
        # Not mandatory: a fanout nobody listens to yet is normal, later processes read the topic.
        publish(channel, exchange, "", command, mandatory=False)
    finally:
        if connection.is_open:
            connection.close()
