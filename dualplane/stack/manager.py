"""The embedded local stack: Kafka, RabbitMQ and S3 brought up together, idempotently.

``up`` leaves alone a service that already answers (``external``) and starts the others side
by side, then waits for each to answer (one it started that has not answered within a start's time is
wedged, and is restarted); ``down`` stops only what ``up`` started. The schema
registry is optional: part of the stack when asked for (``with_registry``) or once ``up`` started it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from dualplane.core.settings import Settings
from dualplane.stack.base import Health, LocalService, Ownership, ServiceStatus
from dualplane.stack.exceptions import StackError
from dualplane.stack.kafka import KafkaBroker
from dualplane.stack.process import start_ticks, wait_until
from dualplane.stack.rabbitmq import RabbitMQNode
from dualplane.stack.s3 import S3Endpoint
from dualplane.stack.schema_registry import SchemaRegistryServer
from dualplane.stack.state import StackState, StartedService

ProgressCallback = Callable[[str, str], None]


def _silent(service: str, message: str) -> None:
    """Default progress callback: say nothing."""


class LocalStack:
    """Start, stop and inspect the services of the embedded stack (three, or four with the registry)."""

    def __init__(self, settings: Settings, *, with_registry: bool = False) -> None:
        self.settings = settings
        self.state = StackState(settings.stack.data_dir)
        self.services: list[LocalService] = [
            KafkaBroker(settings),
            RabbitMQNode(settings),
            S3Endpoint(settings),
        ]
        registry = SchemaRegistryServer(settings)
        if with_registry or registry.name in self.state.load():
            self.services.append(registry)

    def up(self, progress: ProgressCallback = _silent) -> list[ServiceStatus]:
        """Make every service healthy; start those nobody serves. Safe to call repeatedly."""
        pending = [service for service in self.services if not service.healthy()[0]]
        for service in pending:
            service.check_prerequisites()
        for service in pending:
            self._start_unless_starting(service, progress)
        for service in pending:
            progress(service.name, "waiting until it answers")
            elapsed = wait_until(
                lambda s=service: s.healthy()[0],  # type: ignore[misc]
                self.settings.stack.start_timeout_s,
                f"{service.name} at {service.display_endpoint()}",
                service.log_path,
            )
            progress(service.name, f"ready in {elapsed:.1f} s")
        for service in self.services:
            service.after_ready()
        return self.status()

    def down(
        self, progress: ProgressCallback = _silent, only: Collection[str] | None = None
    ) -> list[ServiceStatus]:
        """Stop the services this stack started (or just ``only`` those); others are left alone."""
        started = self.state.load()
        for service in reversed(self.services):
            record = started.get(service.name)
            if record is None or (only is not None and service.name not in only):
                continue
            progress(service.name, f"stopping pid {record.pid}")
            if record.running():
                service.stop(record.pid)
            self.state.forget(service.name)
        return self.status()

    def restart(self, name: str, progress: ProgressCallback = _silent) -> ServiceStatus:
        """Stop and start one service this stack runs (operators; broker-restart tests)."""
        self.stop_service(name, progress)
        self.up(progress)
        return next(s for s in self.status() if s.name == name)

    def stop_service(self, name: str, progress: ProgressCallback = _silent) -> None:
        """Stop one service this stack started; ``up`` starts it again."""
        service = next((s for s in self.services if s.name == name), None)
        if service is None:
            raise StackError(f"no service {name!r}; choose from {', '.join(s.name for s in self.services)}")
        record = self.state.load().get(name)
        if record is None or not record.running():
            raise StackError(f"{name} was not started by `dualplane stack up`; stop it where it runs")
        progress(name, f"stopping pid {record.pid}")
        service.stop(record.pid)
        self.state.forget(name)

    def status(self) -> list[ServiceStatus]:
        started = self.state.load()
        return [self._status_of(service, started.get(service.name)) for service in self.services]

    def _start_unless_starting(self, service: LocalService, progress: ProgressCallback) -> None:
        record = self.state.load().get(service.name)
        if record is not None and record.running():
            running_s = time.time() - record.started_at
            if running_s < self.settings.stack.start_timeout_s:
                progress(service.name, f"already starting (pid {record.pid})")
                return
            # Ours, running for longer than a start may take, and not answering: wedged, not starting
            # (a RabbitMQ restarted under load whose management API answers HTTP 500 for good, say).
            # Waiting would only time out again, so every later `up` failed until someone ran `down`.
            progress(service.name, f"pid {record.pid} still not healthy after {running_s:.0f} s "
                                   f"({service.healthy()[1]}); restarting it")  # fmt: skip
            service.stop(record.pid)
            self.state.forget(service.name)
        if service.endpoint.port_open():
            raise StackError(
                f"{service.display_endpoint()} is taken by a program that is not a healthy "
                f"{service.name} ({service.healthy()[1]}); stop it or move {service.name} to "
                "another port in its DUALPLANE_* setting"
            )
        progress(service.name, "starting" if service.name in ("rabbitmq", "s3") else "installing")
        service.install()
        pid = service.start()
        self.state.record(service.name, StartedService(pid, time.time(), start_ticks(pid)))
        progress(service.name, f"started pid {pid}, log {service.log_path}")

    def _status_of(self, service: LocalService, record: StartedService | None) -> ServiceStatus:
        try:
            healthy, detail = service.healthy()
            endpoint = service.display_endpoint()
        except StackError as error:
            return ServiceStatus(service.name, False, "", "down", detail=str(error), state="failed")
        alive = record is not None and record.running()
        ownership: Ownership
        if alive:
            ownership = "stack"
        elif healthy:
            ownership = "external"
        else:
            ownership = "down"
        pid = record.pid if record is not None and alive else None
        state: Health = "ok" if healthy else ("failed" if record is not None else "stopped")
        return ServiceStatus(service.name, healthy, endpoint, ownership, pid, detail, state)
