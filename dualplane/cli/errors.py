"""Errors from outside the program (brokers down, bad credentials, files), as one line and an exit code.

Every CLI error is one readable line on stderr: exit 1 for a failure, 2 for a usage or
configuration error. What is not listed here is a bug and keeps its traceback.
"""

from __future__ import annotations

import os

import pika.exceptions
from confluent_kafka import KafkaError, KafkaException

from dualplane.core.settings import mask_url_password

STACK_HINT = "is it running? (`dualplane stack status` shows the local stack)"
REFUSED = (pika.exceptions.ProbableAuthenticationError, pika.exceptions.ProbableAccessDeniedError)


def describe(error: BaseException) -> str | None:
    """The one line to print for ``error`` (exit code 1), or None if it is not an outside error."""
    if isinstance(
        error, pika.exceptions.ProbableAuthenticationError | pika.exceptions.ProbableAccessDeniedError
    ):
        return f"RabbitMQ at {_amqp_url()} refused the user, password or vhost of DUALPLANE_AMQP_URL"
    if isinstance(error, pika.exceptions.AMQPConnectionError):
        detail = str(error) or type(error).__name__
        return f"cannot reach RabbitMQ at {_amqp_url()} ({detail}); {STACK_HINT}"
    if isinstance(error, pika.exceptions.AMQPError):
        return f"RabbitMQ at {_amqp_url()} failed: {type(error).__name__}: {error}; {STACK_HINT}"
    if isinstance(error, KafkaException):
        return f"Kafka at {_bootstrap()} failed: {_kafka_reason(error)}; {STACK_HINT}"
    if isinstance(error, OSError):
        where = f": {error.filename}" if error.filename else ""
        return f"{error.strerror or error}{where}"
    return None


def _kafka_reason(error: KafkaException) -> str:
    first = error.args[0] if error.args else None
    return first.str() if isinstance(first, KafkaError) else str(error)


def _amqp_url() -> str:
    # Read again, not from the settings object: the command may have failed before building it.
    return mask_url_password(os.environ.get("DUALPLANE_AMQP_URL", "amqp://127.0.0.1:5672/"))


def _bootstrap() -> str:
    return os.environ.get("DUALPLANE_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
