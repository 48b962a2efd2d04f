"""RabbitMQ from Debian's ``rabbitmq-server`` package, as a private node under the data directory.

We call the scripts in ``/usr/lib/rabbitmq/bin`` directly rather than ``/usr/sbin``'s wrappers,
which switch to the ``rabbitmq`` user and its own cookie and data directory: the node then runs
as the invoking user with its database, logs, config and plugin list all in the stack's folder.
Healthy means an AMQP handshake succeeds and the management API (queue metrics) answers.

One broker setting is not RabbitMQ's default: ``dead_letter_worker_publisher_confirm_timeout``.
A retry tier's expired tasks go back to the lanes through the tier's at-least-once dead-letter
worker, which retries a task it could not hand on only after that timeout (3 minutes by default).
A restarting node recovers its quorum queues before its exchanges, so a tier whose tasks expire at
boot finds no exchange ("Cannot forward any dead-letter messages ... does not exist" in its log)
and held them three minutes. Here they are retried after ``DEAD_LETTER_RETRY_MS``; ``up`` also
sets it on a node already running, whose tiers' workers read it when they start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import httpx

from dualplane.brokers import amqp
from dualplane.stack.base import Endpoint, LocalService
from dualplane.stack.exceptions import PrerequisiteMissing
from dualplane.stack.process import spawn_detached, terminate

RABBITMQ_FIX = "rabbitmq-server not found: install it with `apt-get install -y rabbitmq-server`"
SCRIPT_DIRS = (Path("/usr/lib/rabbitmq/bin"), Path("/usr/local/lib/rabbitmq/bin"))
PLUGINS = ("rabbitmq_management",)
DEAD_LETTER_RETRY_MS = 5000  # docker/compose.yaml sets the same for the compose stack
DEAD_LETTER_RETRY = f"dead_letter_worker_publisher_confirm_timeout, {DEAD_LETTER_RETRY_MS}"


def _script(name: str) -> Path | None:
    for folder in SCRIPT_DIRS:
        if (folder / name).exists():
            return folder / name
    found = shutil.which(name)
    return Path(found) if found else None


class RabbitMQNode(LocalService):
    name = "rabbitmq"

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.parse(self.settings.amqp.url.get_secret_value(), 5672, "DUALPLANE_AMQP_URL")

    @property
    def management(self) -> Endpoint:
        return Endpoint.parse(self.settings.amqp.management_url, 15672, "DUALPLANE_AMQP_MANAGEMENT_URL")

    @property
    def node_name(self) -> str:
        # The port in the name lets two stacks (say, a developer's and a test run's) coexist.
        return f"dualplane-{self.endpoint.port}@localhost"

    def check_prerequisites(self) -> None:
        if _script("rabbitmq-server") is None:
            raise PrerequisiteMissing(RABBITMQ_FIX)

    def start(self) -> int:
        self._write_config()
        server = _script("rabbitmq-server")
        assert server is not None  # check_prerequisites ran first
        return spawn_detached([str(server)], self.log_path, env=self._environment())

    def stop(self, pid: int) -> None:
        self._ctl("stop", timeout_s=60)
        terminate(pid)
        _stop_idle_epmd()

    def after_ready(self) -> None:
        """A node started before advanced.config carried the dead-letter retry gets it now."""
        self._ctl("eval", f"application:set_env(rabbit, {DEAD_LETTER_RETRY}).", timeout_s=30)

    def _ctl(self, *arguments: str, timeout_s: float) -> None:
        """``rabbitmqctl`` against this stack's node; a node it cannot reach is not ours: nothing to do."""
        ctl = _script("rabbitmqctl")
        if ctl is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(
                [str(ctl), *arguments],
                env=self._environment(),
                capture_output=True,
                timeout=timeout_s,
                check=False,
            )

    def healthy(self) -> tuple[bool, str]:
        if not self.endpoint.port_open():
            return False, "port closed"
        if not amqp.answers(self.settings.amqp):
            return (
                False,
                "port open but the AMQP handshake failed (credentials in DUALPLANE_AMQP_URL?)",
            )
        return self._management_answers()

    def _management_answers(self) -> tuple[bool, str]:
        url = amqp.connection_parameters(self.settings.amqp).credentials
        try:
            response = httpx.get(
                f"{self.settings.amqp.management_url.rstrip('/')}/api/overview",
                auth=(url.username, url.password),
                timeout=2.0,
            )
        except httpx.HTTPError:
            return (
                False,
                "AMQP answers but the management API does not (enable rabbitmq_management)",
            )
        if response.status_code != 200:
            return False, f"management API answered HTTP {response.status_code}"
        return True, f"RabbitMQ {response.json().get('rabbitmq_version', '?')}"

    def _write_config(self) -> None:
        for folder in ("mnesia", "logs"):
            (self.home / folder).mkdir(parents=True, exist_ok=True)
        (self.home / "enabled_plugins").write_text(f"[{','.join(PLUGINS)}].\n")
        lines = {
            "listeners.tcp.1": f"{self.endpoint.host}:{self.endpoint.port}",
            "management.tcp.ip": self.management.host,
            "management.tcp.port": str(self.management.port),
            "log.file.level": "info",
            "log.console": "false",
        }
        (self.home / "rabbitmq.conf").write_text("".join(f"{k} = {v}\n" for k, v in lines.items()))
        (self.home / "advanced.config").write_text(f"[{{rabbit, [{{{DEAD_LETTER_RETRY}}}]}}].\n")

    def _environment(self) -> dict[str, str]:
        dist_port = self.settings.stack.rabbitmq_dist_port or self.endpoint.port + 20000
        return {
            **os.environ,
            "RABBITMQ_NODENAME": self.node_name,
            "RABBITMQ_MNESIA_BASE": str(self.home / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.home / "logs"),
            "RABBITMQ_CONFIG_FILE": str(self.home / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.home / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(self.home / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.home / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(self.home / "rabbitmq.pid"),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        }


def _stop_idle_epmd() -> None:
    """Stop the Erlang port mapper our node started, but only when no node is registered with it."""
    epmd = shutil.which("epmd")
    if epmd is None:
        return
    names = subprocess.run([epmd, "-names"], capture_output=True, text=True, check=False)
    if names.returncode == 0 and "name " not in names.stdout:
        subprocess.run([epmd, "-kill"], capture_output=True, check=False)
