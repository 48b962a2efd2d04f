"""Connecting to something that is not RabbitMQ fails as an AMQP connection error, never otherwise.

Found auditing issue 16: a port held by a listener that never answers AMQP (another RabbitMQ's
Erlang distribution port, or a RabbitMQ still booting) made pika raise its connector's own
``AMQPConnectorStackTimeout``, which is no ``AMQPError``. ``dualplane stack status`` and
``stack up`` died with a traceback in :func:`answers`, and ``dlq list`` printed one instead of the
CLI's one-line error; reconnect loops that catch ``AMQPError`` would have missed it too.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pika.exceptions
import pytest

from dualplane.brokers import amqp
from dualplane.core.settings import AmqpSettings

pytestmark = pytest.mark.unit


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


def _settings(port: int) -> AmqpSettings:
    return AmqpSettings(url=f"amqp://guest:guest@127.0.0.1:{port}/%2F", connection_attempts=1)


def test_a_listener_that_never_answers_amqp_is_not_rabbitmq(silent_port: int) -> None:
    assert amqp.answers(_settings(silent_port), timeout_s=0.5) is False


def test_connecting_to_it_raises_an_amqp_connection_error(silent_port: int) -> None:
    with pytest.raises(pika.exceptions.AMQPConnectionError, match="AMQPConnectorStackTimeout"):
        amqp.connect(_settings(silent_port), timeout_s=0.5)
