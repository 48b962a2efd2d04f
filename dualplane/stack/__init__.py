"""The embedded local stack: real Kafka (KRaft), RabbitMQ and an S3 endpoint on loopback."""

from dualplane.stack.base import ServiceStatus
from dualplane.stack.manager import LocalStack

__all__ = ["LocalStack", "ServiceStatus"]
