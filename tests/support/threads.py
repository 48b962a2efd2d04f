"""Run a control-plane consumer on a background thread for the length of a test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from dualplane.brokers.amqp.consumer import ControlConsumer


@contextmanager
def running(consumer: ControlConsumer) -> Iterator[ControlConsumer]:
    thread = threading.Thread(target=consumer.run, name=consumer.name, daemon=True)
    thread.start()
    try:
        yield consumer
    finally:
        consumer.stop()
        thread.join(timeout=15)
        assert not thread.is_alive(), f"{consumer.name} did not stop"
