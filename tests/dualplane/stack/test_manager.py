"""``stack up`` with real processes: a service it started that never answers is restarted, not awaited."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.core.settings import Settings, StackSettings
from dualplane.stack.base import Endpoint, LocalService
from dualplane.stack.exceptions import ServiceStartTimeout
from dualplane.stack.manager import LocalStack
from dualplane.stack.process import pid_alive, spawn_detached
from tests.support.tcp_relay import free_port

pytestmark = [pytest.mark.unit, pytest.mark.slow]

START_TIMEOUT_S = 1.5


class WedgedOnce(LocalService):
    """A real process that never answers the first time it is started, and answers once restarted
    (a broker wedged after a restart: its process runs, its health check keeps failing)."""

    name: ClassVar[str] = "wedged"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.pids: list[int] = []
        self._endpoint = Endpoint("127.0.0.1", free_port())  # closed: nobody else serves it

    @property
    def endpoint(self) -> Endpoint:
        return self._endpoint

    def check_prerequisites(self) -> None:
        """Needs nothing but Python."""

    def start(self) -> int:
        pid = spawn_detached([sys.executable, "-c", "import time; time.sleep(300)"], self.log_path)
        self.pids.append(pid)
        return pid

    def healthy(self) -> tuple[bool, str]:
        if len(self.pids) < 2:
            return False, "answers HTTP 500"
        return pid_alive(self.pids[-1]), "answers"


def test_up_restarts_a_service_it_started_that_stayed_unhealthy_past_its_start_time(tmp_path: Path) -> None:
    settings = Settings(stack=StackSettings(data_dir=tmp_path, start_timeout_s=START_TIMEOUT_S))
    stack = LocalStack(settings)
    service = WedgedOnce(settings)
    stack.services = [service]
    said: list[str] = []
    try:
        with pytest.raises(ServiceStartTimeout):
            stack.up()
        assert len(service.pids) == 1 and pid_alive(service.pids[0])

        [status] = stack.up(lambda _name, message: said.append(message))

        assert status.healthy and status.ownership == "stack", status
        assert len(service.pids) == 2, "the wedged process should have been replaced"
        assert not pid_alive(service.pids[0]), "the wedged process should have been stopped"
        assert any("still not healthy" in line and "restarting" in line for line in said), said
    finally:
        stack.down()
        for pid in service.pids:
            assert not pid_alive(pid)


def test_up_waits_for_a_service_it_started_moments_ago_instead_of_starting_another(tmp_path: Path) -> None:
    """Two ``up`` at once (two terminals, a test session beside a demo) must not start a second copy."""
    settings = Settings(stack=StackSettings(data_dir=tmp_path, start_timeout_s=60))
    stack = LocalStack(settings)
    service = WedgedOnce(settings)
    stack.services = [service]
    try:
        stack._start_unless_starting(service, lambda _name, _message: None)
        said: list[str] = []
        stack._start_unless_starting(service, lambda _name, message: said.append(message))
        assert len(service.pids) == 1, "a second copy was started beside one still starting"
        assert said == [f"already starting (pid {service.pids[0]})"]
    finally:
        stack.down()


class Answering(WedgedOnce):
    """A real process that answers as long as it runs (its health is its pid being alive)."""

    def healthy(self) -> tuple[bool, str]:
        alive = bool(self.pids) and pid_alive(self.pids[-1])
        return alive, "answers" if alive else "port closed"


def test_status_says_stopped_after_down_and_failed_when_a_started_service_died(tmp_path: Path) -> None:
    """``stack down`` then ``stack status`` is a stopped stack, not a failed one (issue #37)."""
    settings = Settings(stack=StackSettings(data_dir=tmp_path, start_timeout_s=5))
    stack = LocalStack(settings)
    service = Answering(settings)
    stack.services = [service]
    try:
        [never] = stack.status()
        assert (never.healthy, never.state) == (False, "stopped"), never
        [running] = stack.up()
        assert (running.healthy, running.state) == (True, "ok"), running
        os.kill(service.pids[-1], signal.SIGKILL)
        assert wait_for(lambda: not pid_alive(service.pids[-1]), timeout_s=5)
        [died] = stack.status()
        assert (died.healthy, died.state) == (False, "failed"), died
    finally:
        stack.down()
    [after_down] = stack.status()
    assert (after_down.healthy, after_down.state) == (False, "stopped"), after_down
