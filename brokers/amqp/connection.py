"""RabbitMQ connections built from settings: one place that knows URLs, timeouts and heartbeats."""

from __future__ import annotations

import logging

import pika
from pika.adapters.utils.connection_workflow import AMQPConnectorException

from dualplane.core.settings import AmqpSettings


class _ClosedIsAWarning(logging.Filter):
    """pika logs a connection the broker closed (a restart, a forced close) as an ERROR, before our
    consumers, which reconnect by themselves, log it as the WARNING it is: that line is a warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and record.getMessage().startswith("Unexpected connection close"):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


logging.getLogger("pika.adapters.blocking_connection").addFilter(_ClosedIsAWarning())


def connection_parameters(amqp: AmqpSettings, *, timeout_s: float = 10.0) -> pika.URLParameters:
    """Parameters for ``amqp.url`` with bounded socket, handshake and blocked-connection timeouts."""
    return _parameters(amqp, amqp.url.get_secret_value(), timeout_s)


def cluster_parameters(amqp: AmqpSettings, *, timeout_s: float = 10.0) -> list[pika.URLParameters]:
    """Parameters for every node (``url``, then ``fallback_urls``), in the order pika tries them."""
    return [_parameters(amqp, url, timeout_s) for url in amqp.urls()]


def _parameters(amqp: AmqpSettings, url: str, timeout_s: float) -> pika.URLParameters:
    parameters = pika.URLParameters(url)
    parameters.heartbeat = amqp.heartbeat_s
    parameters.connection_attempts = amqp.connection_attempts
    parameters.socket_timeout = timeout_s
    parameters.stack_timeout = timeout_s
    parameters.blocked_connection_timeout = max(timeout_s, 30.0)
    return parameters


def connect(amqp: AmqpSettings, *, timeout_s: float = 10.0) -> pika.BlockingConnection:
    """Open a blocking connection to the first node that answers (every node is tried, in order,
    ``connection_attempts`` times); raises ``pika.exceptions.AMQPConnectionError`` when none does."""
    return _open(cluster_parameters(amqp, timeout_s=timeout_s))


def answers(amqp: AmqpSettings, *, timeout_s: float = 2.0) -> bool:
    """True when an AMQP handshake with a node succeeds right now (each node once, no retry)."""
    nodes = cluster_parameters(amqp, timeout_s=timeout_s)
    for parameters in nodes:
        parameters.connection_attempts = 1
    try:
        _open(nodes).close()
    except pika.exceptions.AMQPError:
        return False
    return True


def _open(nodes: list[pika.URLParameters]) -> pika.BlockingConnection:
    # pika walks the sequence, and repeats it per the last entry's connection_attempts and retry_delay.
    try:
        return pika.BlockingConnection(nodes if len(nodes) > 1 else nodes[0])
    except AMQPConnectorException as error:
        # When the last attempt timed out mid-handshake (a port held by something that never speaks
        # AMQP, or a RabbitMQ still booting), pika raises its connector's own error, which is no
        # AMQPError: callers catching AMQPError, and the CLI's one-line errors, would miss it.
        raise pika.exceptions.AMQPConnectionError(f"{type(error).__name__}: {error}") from error


def persistent(**properties: object) -> pika.BasicProperties:
    """Message properties for a message that must survive a broker restart."""
    return pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent, **properties)
