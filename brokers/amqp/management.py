"""Read-only queue metrics from the RabbitMQ management API (depths, consumers, rates)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from dualplane.brokers import amqp
from dualplane.brokers.amqp.exceptions import ControlPlaneError
from dualplane.core.settings import AmqpSettings


@dataclass(frozen=True)
class QueueStats:
    name: str
    ready: int
    unacked: int
    consumers: int
    publish_rate: float
    deliver_rate: float


def queue_stats(amqp_settings: AmqpSettings, prefix: str = "") -> list[QueueStats]:
    """Every queue whose name starts with ``prefix``, with its depth and rates."""
    credentials = amqp.connection_parameters(amqp_settings).credentials
    vhost = quote(amqp.connection_parameters(amqp_settings).virtual_host, safe="")
    url = f"{amqp_settings.management_url.rstrip('/')}/api/queues/{vhost}"
    api = amqp_settings.management_url
    try:
        response = httpx.get(url, auth=(credentials.username, credentials.password), timeout=10)
    except httpx.HTTPError as error:
        raise ControlPlaneError(
            f"the RabbitMQ management API at {api} did not answer ({error}); "
            "check DUALPLANE_AMQP_MANAGEMENT_URL and that rabbitmq_management is enabled"
        ) from error
    if response.status_code == httpx.codes.UNAUTHORIZED:
        # It answered: the plugin is there, the credentials are what is wrong (it used to be blamed).
        raise ControlPlaneError(
            f"the RabbitMQ management API at {api} refused the user or password of DUALPLANE_AMQP_URL"
        )
    if response.status_code != httpx.codes.OK:
        raise ControlPlaneError(
            f"the RabbitMQ management API at {api} answered HTTP {response.status_code} for "
            f"{response.url.path}: {response.text[:200]}"
        )
    return [_stats(queue) for queue in response.json() if str(queue.get("name", "")).startswith(prefix)]


def _stats(queue: dict[str, Any]) -> QueueStats:
    rates = queue.get("message_stats", {})
    return QueueStats(
        name=str(queue["name"]),
        ready=int(queue.get("messages_ready", 0)),
        unacked=int(queue.get("messages_unacknowledged", 0)),
        consumers=int(queue.get("consumers", 0)),
        publish_rate=float(rates.get("publish_details", {}).get("rate", 0.0)),
        deliver_rate=float(rates.get("deliver_get_details", {}).get("rate", 0.0)),
    )
