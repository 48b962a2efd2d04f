"""Where the test session's brokers come from, chosen by ``DUALPLANE_TEST_BACKEND``.

- ``local`` (default): the embedded stack from ``dualplane stack``, reused when it is already up
  (and then left up); otherwise started for the session and stopped at its end, unless
  ``DUALPLANE_TEST_KEEP_STACK=1``.
- ``external``: brokers at the addresses in ``DUALPLANE_KAFKA_BOOTSTRAP_SERVERS``,
  ``DUALPLANE_AMQP_URL`` and ``DUALPLANE_S3_ENDPOINT_URL``; nothing is started or stopped.
- ``containers``: Kafka, RabbitMQ, an S3 endpoint and a schema registry from testcontainers, on the
  images ``scripts/compose-local.sh`` builds (tests/support/containers.py); needs a Docker engine.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from dualplane.brokers import amqp
from dualplane.brokers.kafka import clients
from dualplane.connectors.storage import s3
from dualplane.core.settings import AmqpSettings, KafkaSettings, S3Settings, Settings
from dualplane.stack import LocalStack
from tests.support.containers import ContainersUnavailable, start_containers, wait_until

BACKENDS = ("local", "external", "containers")


class BrokersUnavailable(RuntimeError):
    """The chosen backend could not provide answering brokers; the message says why and what to do."""


@dataclass
class BrokerSession:
    settings: Settings
    backend: str
    # A schema registry the back end runs beside the brokers (settings stay out of registry mode).
    registry_url: str | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for closer in reversed(self.closers):
            closer()


def open_brokers() -> BrokerSession:
    backend = os.environ.get("DUALPLANE_TEST_BACKEND", "local")
    if backend not in BACKENDS:
        raise BrokersUnavailable(f"DUALPLANE_TEST_BACKEND={backend!r}; choose one of {BACKENDS}")
    opener = {"local": _local, "external": _external, "containers": _containers}[backend]
    session = opener()
    _require_answering(session.settings)
    return session


def _local() -> BrokerSession:
    settings = Settings.from_env()
    stack = LocalStack(settings)
    already_up = {status.name for status in stack.status() if status.healthy}
    stack.up()
    session = BrokerSession(settings, "local")
    started_here = {s.name for s in stack.services} - already_up
    if started_here and os.environ.get("DUALPLANE_TEST_KEEP_STACK") != "1":
        session.closers.append(lambda: stack.down(only=started_here))
    return session


def _external() -> BrokerSession:
    return BrokerSession(Settings.from_env(), "external")


def _containers() -> BrokerSession:
    try:
        endpoints = start_containers()
    except ContainersUnavailable as error:
        raise BrokersUnavailable(f"{error}; unset DUALPLANE_TEST_BACKEND to use the local stack") from error
    settings = Settings.from_env().model_copy(
        update={
            "kafka": KafkaSettings(bootstrap_servers=endpoints.kafka),
            "amqp": AmqpSettings(
                url=endpoints.amqp_url,  # type: ignore[arg-type]
                management_url=endpoints.management_url,
            ),
            "s3": S3Settings(endpoint_url=endpoints.s3_url),
        }
    )
    session = BrokerSession(settings, "containers", registry_url=endpoints.registry_url)
    session.closers += endpoints.stops
    try:
        wait_until(lambda: clients.answers(settings.kafka), f"Kafka at {endpoints.kafka}")
        wait_until(lambda: amqp.answers(settings.amqp), "RabbitMQ")
        wait_until(lambda: s3.answers(settings.s3), f"S3 at {endpoints.s3_url}")
        s3.ensure_bucket(settings.s3)  # as the local stack's S3 endpoint does
    except Exception:
        session.close()
        raise
    return session


def _require_answering(settings: Settings) -> None:
    problems = []
    if not clients.answers(settings.kafka, timeout_s=10):
        problems.append(f"Kafka at {settings.kafka.bootstrap_servers}")
    if not amqp.answers(settings.amqp, timeout_s=10):
        problems.append("RabbitMQ at DUALPLANE_AMQP_URL")
    if not s3.answers(settings.s3, timeout_s=10):
        problems.append(f"S3 at {settings.s3.endpoint_url}")
    if problems:
        raise BrokersUnavailable(
            f"not answering: {', '.join(problems)}; start them (`dualplane stack up`) or fix the "
            "DUALPLANE_* addresses"
        )
