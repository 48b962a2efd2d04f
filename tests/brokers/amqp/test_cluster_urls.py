"""A list of RabbitMQ nodes: a service connects to the first that answers, so it reconnects to a node
that survives when one is gone for good; the management API is read the same way.

The "lost node" is a loopback port nothing listens on, placed first; the surviving node is the
session's real RabbitMQ.
"""

from __future__ import annotations

import pika.exceptions
import pytest
from pydantic import SecretStr, ValidationError

from dualplane.brokers import amqp
from dualplane.brokers.amqp.management import get
from dualplane.core.settings import AmqpSettings, KafkaSettings, Settings
from tests.support.cli import free_ports

pytestmark = pytest.mark.integration


def _with_a_lost_node_first(settings: Settings) -> AmqpSettings:
    (gone,) = free_ports(1)
    real = settings.amqp
    return real.model_copy(
        update={
            "url": SecretStr(f"amqp://guest:guest@127.0.0.1:{gone}/%2F"),
            "fallback_urls": real.url,
            "management_url": f"http://127.0.0.1:{gone}",
            "fallback_management_urls": real.management_url,
            "connection_attempts": 1,
        }
    )


def test_a_connection_goes_to_the_first_node_that_answers(settings: Settings) -> None:
    nodes = _with_a_lost_node_first(settings)
    assert nodes.urls()[1] == settings.amqp.url.get_secret_value()
    connection = amqp.connect(nodes, timeout_s=5)
    try:
        assert connection.is_open
        channel = connection.channel()
        assert channel.queue_declare("", exclusive=True).method.queue
    finally:
        connection.close()
    assert amqp.answers(nodes, timeout_s=2)


def test_no_node_answering_is_an_amqp_connection_error(settings: Settings) -> None:
    first, second = free_ports(2)
    nodes = AmqpSettings(
        url=f"amqp://guest:guest@127.0.0.1:{first}/%2F",
        fallback_urls=f"amqp://guest:guest@127.0.0.1:{second}/%2F",
        connection_attempts=1,
    )
    assert not amqp.answers(nodes, timeout_s=1)
    with pytest.raises(pika.exceptions.AMQPConnectionError):
        amqp.connect(nodes, timeout_s=1)


def test_the_management_api_is_read_from_a_node_that_answers(settings: Settings) -> None:
    nodes = get(_with_a_lost_node_first(settings), "/api/nodes")
    assert [node["running"] for node in nodes] == [True]


@pytest.mark.unit
def test_a_fallback_that_is_no_amqp_url_is_refused_where_settings_are_read() -> None:
    with pytest.raises(ValidationError, match="amqp://"):
        AmqpSettings(fallback_urls="amqp://guest:guest@a:5672/%2F, http://b:5672/")
    with pytest.raises(ValidationError, match="http"):
        AmqpSettings(fallback_management_urls="rabbit-2:15672")
    assert AmqpSettings(fallback_urls=" amqp://a/%2F ,amqp://b/%2F,").urls()[1:] == [
        "amqp://a/%2F",
        "amqp://b/%2F",
    ]


@pytest.mark.unit
def test_more_insync_replicas_than_copies_is_refused() -> None:
    with pytest.raises(ValidationError, match="MIN_INSYNC_REPLICAS"):
        KafkaSettings(replication_factor=1, min_insync_replicas=2)
    assert KafkaSettings(replication_factor=3, min_insync_replicas=2).min_insync_replicas == 2
