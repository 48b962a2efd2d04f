"""RabbitMQ plumbing: connections, publishing, consuming, topology, control messages.

The connection helpers are re-exported here, so callers write ``amqp.connect(settings.amqp)``.
"""

from dualplane.brokers.amqp.connection import answers, connect, connection_parameters, persistent

__all__ = ["answers", "connect", "connection_parameters", "persistent"]
