"""Read-only queue metrics from the RabbitMQ management API (depths, consumers, rates, members).

Every node of a cluster serves the whole cluster's view: :func:`get` asks the API that answered
last, then ``management_url`` and the ``fallback_management_urls`` in order, so the view survives
the loss of a node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from dualplane.brokers import amqp
from dualplane.brokers.amqp.exceptions import ControlPlaneError
from dualplane.brokers.amqp.nodes import in_order, remember, unresolved
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
    return [_stats(queue) for queue in queues(amqp_settings) if str(queue.get("name", "")).startswith(prefix)]


def queues(amqp_settings: AmqpSettings) -> list[dict[str, Any]]:
    """The management API's objects of every queue of the URL's vhost, as it returns them."""
    vhost = quote(amqp.connection_parameters(amqp_settings).virtual_host, safe="")
    return list(get(amqp_settings, f"/api/queues/{vhost}"))


def get(amqp_settings: AmqpSettings, path: str) -> Any:
    """The JSON at ``path`` from the first management API that answers (a node that is away, for
    good or not, is skipped); :class:`ControlPlaneError` saying why when none did."""
    credentials = amqp.connection_parameters(amqp_settings).credentials
    auth = (credentials.username, credentials.password)
    failures = []
    apis = amqp_settings.management_urls()
    for api in in_order(apis):
        # A lost node's name can hang the lookup far past httpx's timeout, which does not cover it.
        host = urlsplit(api)
        why = unresolved(host.hostname or "", host.port or (443 if host.scheme == "https" else 80))
        try:
            if why is not None:
                raise httpx.ConnectError(why)
            response = httpx.get(f"{api.rstrip('/')}{path}", auth=auth, timeout=10)
        except httpx.HTTPError as error:
            failures.append(f"{api} ({error})")
            continue
        remember(apis, api)
        return _checked(api, response)
    raise ControlPlaneError(
        f"the RabbitMQ management API did not answer at {'; '.join(failures)}; check "
        "DUALPLANE_AMQP_MANAGEMENT_URL (and _FALLBACK_MANAGEMENT_URLS) and that rabbitmq_management "
        "is enabled"
    )


def _checked(api: str, response: httpx.Response) -> Any:
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
    return response.json()


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
