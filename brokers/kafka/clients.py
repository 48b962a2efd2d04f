"""Kafka clients built from settings: every producer, consumer and admin starts from here.

Producers are idempotent with ``acks=all`` by default: a page or event the broker confirmed is
never duplicated by a client retry nor lost by a leader change.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from dualplane.brokers.kafka.logs import KAFKA_LOG, LIBRDKAFKA_LOG_LEVEL
from dualplane.core.settings import KafkaSettings

log = logging.getLogger(__name__)

T = TypeVar("T")


class ClientWedged(Exception):
    """A client call did not return within its own timeout: the client must be abandoned."""


class NotAcknowledged(Exception):
    """Kafka did not take a produced value; the message says why (its error, or no answer in time)."""


# librdkafka's errors of a broker that is away for a while (restarting): the client, or a new one, gets
# through once it is back. Anything else may need a person.
OUTAGE_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._WAIT_COORD,
        KafkaError._TIMED_OUT,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._RESOLVE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` says Kafka was away (a restart, a broker unreachable for a while) rather than
    something a person must fix: a call that wedged, or a Kafka error that is retriable or one of
    :data:`OUTAGE_CODES`. Services log these as one WARNING line and start over, without a traceback."""
    if isinstance(error, ClientWedged):
        return True
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        kafka_error = error.args[0]
        return bool(kafka_error.retriable()) or kafka_error.code() in OUTAGE_CODES
    return False


_QUIET = {"log_level": 0}  # health probes must not spray librdkafka connection errors
# librdkafka's lines through Python logging (brokers.kafka.logs), not straight to stderr.
_LOGS: dict[str, Any] = {"logger": KAFKA_LOG, "log_level": LIBRDKAFKA_LOG_LEVEL}


def producer_config(kafka: KafkaSettings, **overrides: Any) -> dict[str, Any]:
    """Idempotent, acks=all, compressed producer settings plus the caller's overrides."""
    config: dict[str, Any] = {
        **kafka.client_config(),
        **_LOGS,
        "enable.idempotence": True,
        "acks": "all",
        "compression.type": "zstd",
        "linger.ms": 5,
    }
    config.update(overrides)
    return config


def consumer_config(kafka: KafkaSettings, group_id: str, **overrides: Any) -> dict[str, Any]:
    """Manual-commit, read_committed consumer settings plus the caller's overrides."""
    config: dict[str, Any] = {
        **kafka.client_config(),
        **_LOGS,
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    }
    config.update(overrides)
    return config


def producer(kafka: KafkaSettings, **overrides: Any) -> Producer:
    return Producer(producer_config(kafka, **overrides))


def produce_acked(
    kafka: KafkaSettings, topic: str, key: bytes, value: bytes | None, timeout_s: float
) -> str | None:
    """Produce one keyed value (None: a tombstone) and wait up to ``timeout_s`` for Kafka to take it:
    None once it has, else why not (the delivery error, or no acknowledgement in time). A client that
    cannot be made raises KafkaException or RuntimeError, for the caller to say what it could not reach."""
    try:
        produce_one(kafka, topic, key, value, timeout_s)
    except NotAcknowledged as error:
        return str(error)
    return None


def produce_one(
    kafka: KafkaSettings, topic: str, key: bytes, value: bytes | None, timeout_s: float
) -> Message:
    """As :func:`produce_acked`, but the delivered message (its partition and offset) once Kafka took
    it, and :class:`NotAcknowledged` saying why when it did not."""
    errors: list[KafkaError] = []
    delivered: list[Message] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append(error)
        delivered.append(message)

    made = producer(kafka)
    made.produce(topic, value, key=key, on_delivery=on_delivery)
    unsent = made.flush(timeout_s)
    if unsent or errors or not delivered:
        raise NotAcknowledged(str(errors[0]) if errors else f"no acknowledgement within {timeout_s:.0f} s")
    return delivered[0]


def consumer(kafka: KafkaSettings, group_id: str, **overrides: Any) -> Consumer:
    return Consumer(consumer_config(kafka, group_id, **overrides))


def admin(kafka: KafkaSettings, *, quiet: bool = False) -> AdminClient:
    return AdminClient({**kafka.client_config(), **_LOGS, **(_QUIET if quiet else {})})


def answers(kafka: KafkaSettings, *, timeout_s: float = 2.0) -> bool:
    """True when the cluster answers a metadata request within ``timeout_s``."""
    try:
        metadata = admin(kafka, quiet=True).list_topics(timeout=timeout_s)
    except Exception:  # KafkaException on timeout; any failure means "not answering"
        return False
    return bool(metadata.brokers)


def topic_names(kafka: KafkaSettings, *, timeout_s: float = 30.0) -> set[str]:
    """The names of the topics the cluster has now."""
    return set(admin(kafka).list_topics(timeout=timeout_s).topics)


def ensure_topics(
    kafka: KafkaSettings,
    names: list[str],
    *,
    partitions: int = 1,
    config: dict[str, str] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """Create the topics that do not exist yet; existing ones are left as they are."""
    client = admin(kafka)
    existing = set(client.list_topics(timeout=timeout_s).topics)
    missing = [
        NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=kafka.replication_factor,
            config=replicated(kafka, config or {}),
        )
        for name in names
        if name not in existing
    ]
    if not missing:
        return
    for name, future in client.create_topics(missing, request_timeout=timeout_s).items():
        try:
            future.result()
        except Exception as error:
            if "TOPIC_ALREADY_EXISTS" in str(error):  # lost a race with another creator
                continue
            # A loaded cluster's controller can answer after the request timed out (3 replicas to
            # place, 3 brokers starting): the topic may exist all the same, so look once more.
            if "TIMED_OUT" in str(error) and _appears(client, name, timeout_s):
                continue
            raise RuntimeError(f"could not create Kafka topic {name!r}: {error}") from error


def _appears(client: AdminClient, name: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if name in client.list_topics(timeout=timeout_s).topics:
                return True
        except Exception:  # the cluster is still slow: ask again until the deadline
            pass
        time.sleep(1.0)
    return False


def replicated(kafka: KafkaSettings, config: dict[str, str]) -> dict[str, str]:
    """``config`` with ``min.insync.replicas`` from the settings, unless the caller set it: with
    ``acks=all`` a write then waits for that many copies, so losing a broker loses no acknowledged
    write. Left to the broker's default at 1, so a single broker's topics carry no override."""
    if kafka.min_insync_replicas == 1:
        return config
    return {"min.insync.replicas": str(kafka.min_insync_replicas), **config}


def wait_for_leaders(kafka: KafkaSettings, names: list[str], *, timeout_s: float = 30.0) -> None:
    """Wait until every partition of ``names`` has a leader; a just-created topic may have none yet."""
    client = admin(kafka)
    deadline = time.monotonic() + timeout_s
    while True:
        topics = client.list_topics(timeout=timeout_s).topics
        waiting = [
            name
            for name in names
            if name not in topics
            or topics[name].error is not None
            or not topics[name].partitions
            or any(partition.leader < 0 for partition in topics[name].partitions.values())
        ]
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"Kafka topics {waiting} still have partitions without a leader after {timeout_s:.0f} s"
            )
        time.sleep(0.2)


def close_within(consumer: Consumer, timeout_s: float = 15.0) -> bool:
    """Close ``consumer`` but wait at most ``timeout_s``; False (and a warning) if it is still closing.

    ``Consumer.close`` leaves the group and can block without end while the cluster is restarting
    (confluent-kafka-python#1667), which would wedge a service that only wanted to start over with a
    new consumer. The close goes on in a daemon thread; a consumer that never finishes closing is
    abandoned (the broker drops it from the group after its session timeout).
    """
    try:
        within(consumer.close, timeout_s, "consumer-close")
    except ClientWedged:
        log.warning("a Kafka consumer did not close within %.0f s; abandoned it and went on", timeout_s)
        return False
    except Exception as error:  # closed as far as it could: nothing left to do with it
        log.warning("closing a Kafka consumer failed: %s", error)
    return True


def within(call: Callable[[], T], timeout_s: float, what: str) -> T:
    """``call()`` on a daemon thread, waiting at most ``timeout_s``; :class:`ClientWedged` past that.

    For librdkafka calls that take a timeout but have been seen to block far beyond it: after a
    broker restart, ``commit_transaction(60)`` blocked for over 5 minutes in the fresh-machine CI
    rehearsal. The caller must not use the client again once this raised.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error
        finally:
            done.set()

    threading.Thread(target=run, name=f"kafka-{what}", daemon=True).start()
    if not done.wait(timeout_s):
        raise ClientWedged(f"{what} did not return within {timeout_s:.0f} s; abandoning the client")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
