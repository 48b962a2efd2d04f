"""RabbitMQ connections built from settings: one place that knows URLs, timeouts and heartbeats."""

from __future__ import annotations

import logging
import time

import pika
from pika.adapters.utils.connection_workflow import AMQPConnectorException

from dualplane.brokers.amqp.nodes import RESOLVE_TIMEOUT_S, in_order, remember, unresolved
from dualplane.core.settings import AmqpSettings

# Between passes over the nodes (pika's own default for its retry_delay).
RETRY_DELAY_S = 2.0


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
    """Parameters for every node (``url``, then ``fallback_urls``), in their configured order."""
    return [_parameters(amqp, url, timeout_s) for url in amqp.urls()]


def _parameters(amqp: AmqpSettings, url: str, timeout_s: float) -> pika.URLParameters:
    parameters = pika.URLParameters(url)
    parameters.heartbeat = amqp.heartbeat_s
    parameters.connection_attempts = 1  # the passes over the nodes are _open's (nodes.py says why)
    parameters.socket_timeout = timeout_s
    parameters.stack_timeout = timeout_s
    parameters.blocked_connection_timeout = max(timeout_s, 30.0)
    return parameters


def connect(amqp: AmqpSettings, *, timeout_s: float = 10.0) -> pika.BlockingConnection:
    """Open a blocking connection to the first node that answers: every node is tried once per
    pass, the one that answered last first, for ``connection_attempts`` passes; raises
    ``pika.exceptions.AMQPConnectionError`` saying what each node did when none answers."""
    return _open(cluster_parameters(amqp, timeout_s=timeout_s), passes=amqp.connection_attempts)


def answers(amqp: AmqpSettings, *, timeout_s: float = 2.0) -> bool:
    """True when an AMQP handshake with a node succeeds right now (each node once, no retry)."""
    try:
        _open(cluster_parameters(amqp, timeout_s=timeout_s), passes=1).close()
    except pika.exceptions.AMQPError:
        return False
    return True


def _open(nodes: list[pika.URLParameters], *, passes: int) -> pika.BlockingConnection:
    by_name = {f"{node.host}:{node.port}": node for node in nodes}
    cluster = list(by_name)
    failures: dict[str, str] = {}
    for number in range(passes):
        if number:
            time.sleep(RETRY_DELAY_S)
        for name in in_order(cluster):
            connection = _open_one(by_name[name], failures, name)
            if connection is not None:
                remember(cluster, name)
                return connection
    said = "; ".join(f"{name}: {why}" for name, why in failures.items())
    raise pika.exceptions.AMQPConnectionError(f"no RabbitMQ node answered ({said})")


def _open_one(
    node: pika.URLParameters, failures: dict[str, str], name: str
) -> pika.BlockingConnection | None:
    """A connection to ``node``, or None with why not in ``failures``; a refused login is raised at
    once (every node of a cluster has the same users, so another would refuse it too)."""
    why = unresolved(node.host, node.port, min(RESOLVE_TIMEOUT_S, node.socket_timeout or RESOLVE_TIMEOUT_S))
    if why is not None:
        failures[name] = why
        return None
    try:
        return pika.BlockingConnection(node)
    except (pika.exceptions.ProbableAuthenticationError, pika.exceptions.ProbableAccessDeniedError):
        raise
    except (pika.exceptions.AMQPError, AMQPConnectorException, OSError) as error:
        # pika's connector errors (a port held by something that never speaks AMQP, a RabbitMQ
        # still booting: AMQPConnectorStackTimeout) and bare socket errors are no AMQPError: they
        # become part of the one AMQPConnectionError callers and the CLI's one-line errors catch.
        failures[name] = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        return None


def persistent(**properties: object) -> pika.BasicProperties:
    """Message properties for a message that must survive a broker restart."""
    return pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent, **properties)
