"""A broker-closed connection that a consumer recovers from is a WARNING line, no ERROR, no
traceback (#27 P8: services logged ERROR lines and ``ConnectionClosedByBroker`` tracebacks for
RabbitMQ restarts they recovered from). The broker closes this process's connections through the
management API, as a restart does (CONNECTION_FORCED); the shared broker itself is left alone."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.core.settings import Settings
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier

pytestmark = pytest.mark.integration


def own_amqp_ports(settings: Settings) -> set[int]:
    """Local ports of this process's TCP connections to the broker's AMQP port (from /proc: no tool
    needed). The port is the settings', not 5672: a private stack on another port found none."""
    port_hex = f":{httpx.URL(settings.amqp.url.get_secret_value()).port or 5672:04X}"
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        target = str(fd.readlink()) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if remote.endswith(port_hex) and inode in inodes:
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def force_close(settings: Settings, ports: set[int]) -> int:
    """Have the broker close the connections from ``ports``; the management API lists a new
    connection only after its next statistics round (5 s by default), so ask until it lists all."""
    api = f"{settings.amqp.management_url}/api/connections"
    url = httpx.URL(settings.amqp.url.get_secret_value())
    auth = (url.username, url.password)
    names: list[str] = []

    def listed() -> bool:
        connections = [c for c in httpx.get(api, auth=auth, timeout=10).json() if c.get("peer_port") in ports]
        names[:] = [c["name"] for c in connections]
        return len(names) == len(ports)  # every one of them: the consumer's as well as the view's

    wait_for(listed, 20, interval_s=0.5)
    for name in names:
        httpx.delete(f"{api}/{name}", auth=auth, headers={"X-Reason": "test restart"}, timeout=10)
    return len(names)


def test_a_connection_the_broker_closes_is_a_warning_and_the_consumer_recovers(
    control_plane: ControlPlaneFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    running = RunningFrontier(control_plane.settings()).start()
    try:
        consumer = running.consumer
        assert wait_for(lambda: consumer.generation >= 1 and consumer.channel is not None, 20)
        generation = consumer.generation
        caplog.clear()

        assert force_close(running.settings, own_amqp_ports(running.settings)) >= 1
        assert wait_for(lambda: consumer.generation > generation, 20), "the consumer did not reconnect"
    finally:
        running.stop()

    loud = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.ERROR]
    traced = [(r.name, r.getMessage()) for r in caplog.records if r.exc_info]
    assert loud == [], loud
    assert traced == [], traced
    assert any("connection lost" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
