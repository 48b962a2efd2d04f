"""clients.produce_acked says why Kafka did not take a value, instead of losing it silently."""

from __future__ import annotations

import pytest

from dualplane.brokers.kafka import clients
from dualplane.core.settings import KafkaSettings

pytestmark = pytest.mark.unit


def test_no_broker_is_no_acknowledgement_within_the_time_given() -> None:
    nowhere = KafkaSettings(bootstrap_servers="127.0.0.1:1")  # nothing listens on port 1
    why = clients.produce_acked(nowhere, "profiles", b"key", b"value", timeout_s=1.0)
    assert why == "no acknowledgement within 1 s"
