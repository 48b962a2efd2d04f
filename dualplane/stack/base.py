"""The contract every local-stack service implements, and the status it reports."""

from __future__ import annotations

import socket
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from dualplane.core.settings import Settings
from dualplane.stack.exceptions import StackError
from dualplane.stack.process import terminate

Ownership = Literal["stack", "external", "down"]
# What a person should read: "stopped" is a service nobody runs (never started, or stopped by
# `stack down`); "failed" is one `stack up` started that no longer answers (it died or is wedged).
Health = Literal["ok", "stopped", "failed"]
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class ServiceStatus:
    """What ``stack status`` reports for one service.

    ``ownership`` is ``stack`` when ``stack up`` started it (``stack down`` will stop it),
    ``external`` when something else already served the endpoint (left alone), ``down`` otherwise.
    """

    name: str
    healthy: bool
    endpoint: str
    ownership: Ownership
    pid: int | None = None
    detail: str = ""
    state: Health = "ok"


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    @classmethod
    def parse(cls, address: str, default_port: int, setting: str) -> Endpoint:
        """Parse ``host:port`` or a URL; the local stack only serves loopback addresses."""
        parts = urlsplit(address if "://" in address else f"//{address}")
        host, port = parts.hostname or "", parts.port or default_port
        if host not in LOOPBACK_HOSTS:
            raise StackError(
                f"{setting}={address!r} is not a loopback address; the local stack only serves "
                "127.0.0.1. Unset it, or use external brokers instead of `dualplane stack`."
            )
        return cls("127.0.0.1" if host == "localhost" else host, port)

    def port_open(self, timeout_s: float = 0.5) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=timeout_s):
                return True
        except OSError:
            return False


class LocalService(ABC):
    """One process of the embedded stack (Kafka, RabbitMQ, S3) on loopback.

    Implementations are cheap to construct; nothing touches the disk or network until called.
    """

    name: ClassVar[str]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.stack.data_dir / self.name

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / f"{self.name}.out"

    @property
    @abstractmethod
    def endpoint(self) -> Endpoint:
        """The address clients reach, taken from the client settings."""

    @abstractmethod
    def check_prerequisites(self) -> None:
        """Raise ``PrerequisiteMissing`` naming the install command when a program is missing."""

    def install(self) -> None:
        """Fetch or prepare what the service needs before its first start (idempotent)."""

    @abstractmethod
    def start(self) -> int:
        """Start the service detached and return its pid; do not wait for it to be ready."""

    @abstractmethod
    def healthy(self) -> tuple[bool, str]:
        """Probe the service as a client would, within a couple of seconds: (ok, detail)."""

    def after_ready(self) -> None:
        """Hook run once the service answers (e.g. create the default bucket)."""

    def stop(self, pid: int) -> None:
        """Stop the process ``start`` returned; the default is SIGTERM, then SIGKILL."""
        terminate(pid)

    def display_endpoint(self) -> str:
        return f"{self.endpoint.host}:{self.endpoint.port}"
