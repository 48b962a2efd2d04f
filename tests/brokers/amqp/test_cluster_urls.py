"""A list of RabbitMQ nodes: a service connects to the first that answers, so it reconnects to a node
that survives when one is gone for good; the management API is read the same way.

The "lost node" is a loopback port nothing listens on, or a name that does not resolve (a removed
container's, on a compose network), placed first; the surviving node is the session's real RabbitMQ.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pika
import pika.exceptions
import pytest
from pydantic import SecretStr, ValidationError

from dualplane.brokers import amqp
from dualplane.brokers.amqp.connection import cluster_parameters
from dualplane.brokers.amqp.management import get
from dualplane.brokers.amqp.nodes import RESOLVE_TIMEOUT_S, in_order, remember, unresolved
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


def _behind_a_name_that_does_not_resolve(settings: Settings) -> AmqpSettings:
    """A lost node the way a compose network sees it (its container removed: its name is gone),
    first; a node that refuses, second; the session's real RabbitMQ, last."""
    (refusing,) = free_ports(1)
    port = pika.URLParameters(settings.amqp.url.get_secret_value()).port
    return settings.amqp.model_copy(
        update={
            "url": SecretStr(f"amqp://guest:guest@lost-node.invalid:{port}/%2F"),
            "fallback_urls": SecretStr(
                f"amqp://guest:guest@127.0.0.1:{refusing}/%2F,{settings.amqp.url.get_secret_value()}"
            ),
            "management_url": "http://lost-node.invalid:15672",
            "fallback_management_urls": settings.amqp.management_url,
            "connection_attempts": 1,
        }
    )


def test_a_first_node_whose_name_no_longer_resolves_is_passed_over(settings: Settings) -> None:
    # pika's own walk ended its pass at the first name that did not resolve and raised the bare
    # gaierror: the survivors were never tried (the node-loss run that stalled).
    nodes = _behind_a_name_that_does_not_resolve(settings)
    connection = amqp.connect(nodes, timeout_s=5)
    try:
        assert connection.is_open
        assert connection.channel().queue_declare("", exclusive=True).method.queue
    finally:
        connection.close()
    cluster = [f"{node.host}:{node.port}" for node in cluster_parameters(nodes)]
    assert in_order(cluster)[0] == cluster[2], "the node that answered is tried first next time"
    assert get(nodes, "/api/overview")["rabbitmq_version"]


def test_a_name_whose_lookup_hangs_costs_the_resolve_bound_not_the_resolver_timeout(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The compose network's resolver took 12 s to give up on a removed container's name; here the
    # lookup of the lost node's name never returns at all.
    real_lookup = socket.getaddrinfo

    def lookup(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "lost-node.invalid":
            time.sleep(60)
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    real = settings.amqp.url.get_secret_value()
    port = pika.URLParameters(real).port
    nodes = settings.amqp.model_copy(
        update={
            "url": SecretStr(f"amqp://guest:guest@lost-node.invalid:{port}/%2F"),
            "fallback_urls": settings.amqp.url,
            "connection_attempts": 1,
        }
    )
    started = time.monotonic()
    amqp.connect(nodes, timeout_s=5).close()
    elapsed_s = time.monotonic() - started
    # The bound is 2 s; the margin is for a machine under heavy load, far below the 60 s hang.
    assert elapsed_s < RESOLVE_TIMEOUT_S + 20, elapsed_s


@pytest.mark.unit
def test_a_lookup_that_hangs_is_reported_once_its_bound_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: time.sleep(60))
    started = time.monotonic()
    assert unresolved("lost-node", 5672, timeout_s=0.2) == "lost-node did not resolve within 0.2 s"
    assert time.monotonic() - started < 10
    monkeypatch.undo()
    assert unresolved("127.0.0.1", 5672) is None
    assert "does not resolve" in (unresolved("lost-node.invalid", 5672) or "")


@pytest.mark.unit
def test_the_node_that_answered_last_is_tried_first_and_the_rest_keep_their_order() -> None:
    cluster = ["a.test:5672", "b.test:5672", "c.test:5672"]
    assert in_order(cluster) == cluster
    remember(cluster, "c.test:5672")
    assert in_order(cluster) == ["c.test:5672", "a.test:5672", "b.test:5672"]
    assert in_order(cluster[:2]) == cluster[:2], "remembered per configured list"
