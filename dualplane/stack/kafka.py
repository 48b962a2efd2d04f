"""Apache Kafka in KRaft mode, one node that is both broker and controller, on loopback.

The storage is formatted once with a cluster id kept beside it; the broker runs as a plain JVM
process with its logs rotated under the stack's data directory. Healthy means a metadata request
answers, exactly what every client does first.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import uuid

from dualplane.brokers.kafka import clients
from dualplane.core.settings import Settings
from dualplane.stack.base import Endpoint, LocalService
from dualplane.stack.exceptions import PrerequisiteMissing, StackError
from dualplane.stack.kafka_dist import JAVA_FIX, KafkaDistribution, template
from dualplane.stack.process import spawn_detached


class KafkaBroker(LocalService):
    name = "kafka"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.distribution = KafkaDistribution(settings.stack.kafka_version)
        self.data_path = self.home / "data"
        self.logs_path = self.home / "logs"
        self.config_path = self.home / "server.properties"
        self.log4j_path = self.home / "log4j.properties"

    @property
    def endpoint(self) -> Endpoint:
        first = self.settings.kafka.bootstrap_servers.split(",")[0]
        return Endpoint.parse(first, 9092, "DUALPLANE_KAFKA_BOOTSTRAP_SERVERS")

    @property
    def controller_port(self) -> int:
        return self.settings.stack.kafka_controller_port or self.endpoint.port + 1

    def check_prerequisites(self) -> None:
        if shutil.which("java") is None:
            raise PrerequisiteMissing(JAVA_FIX)
        if self.settings.kafka.security_protocol != "PLAINTEXT":
            raise StackError(
                "the local Kafka serves PLAINTEXT only; unset DUALPLANE_KAFKA_SECURITY_PROTOCOL "
                "or point DUALPLANE_KAFKA_BOOTSTRAP_SERVERS at your secured cluster"
            )

    def install(self) -> None:
        self.distribution.install()

    def start(self) -> int:
        self._write_config()
        if not (self.data_path / "meta.properties").exists():
            self._format_storage()
        heap = f"-Xmx{self.settings.stack.kafka_heap_mb}m"
        command = self.distribution.java_command(
            "kafka.Kafka",
            str(self.config_path),
            jvm_options=(heap, "-Xms256m", *self._jvm_logging()),
        )
        return spawn_detached(command, self.log_path)

    def healthy(self) -> tuple[bool, str]:
        if not self.endpoint.port_open():
            return False, "port closed"
        if clients.answers(self.settings.kafka):
            return True, f"KRaft {self.settings.stack.kafka_version}"
        return False, "port open but no metadata answer"

    def _jvm_logging(self) -> tuple[str, ...]:
        return (
            f"-Dlog4j.configuration=file:{self.log4j_path}",
            f"-Dkafka.logs.dir={self.logs_path}",
        )

    def _write_config(self) -> None:
        host, port = self.endpoint.host, self.endpoint.port
        self.logs_path.mkdir(parents=True, exist_ok=True)
        self.data_path.mkdir(parents=True, exist_ok=True)
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_path),
            "num.partitions": "3",
            # Fewer internal partitions: the first group and idempotent producer start faster.
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.num.partitions": "4",
            # One node: internal topics cannot have more replicas than brokers.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            # Tests and the demo create groups constantly; do not wait 3 s before each rebalance.
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "log.retention.hours": "168",
            "message.max.bytes": str(16 * 1024 * 1024),
        }
        self.config_path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        self.log4j_path.write_text(template("kafka-log4j.properties"))

    def _format_storage(self) -> None:
        cluster_id_path = self.home / "cluster.id"
        if not cluster_id_path.exists():
            cluster_id_path.write_text(_kafka_uuid())
        command = self.distribution.java_command(
            "kafka.tools.StorageTool", "format", "--ignore-formatted",
            f"--cluster-id={cluster_id_path.read_text().strip()}", "--config", str(self.config_path),
            jvm_options=self._jvm_logging(),
        )  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise StackError(f"formatting Kafka storage in {self.data_path} failed: {result.stderr}")


def _kafka_uuid() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (as StorageTool makes).

    Like Kafka's own ``Uuid.randomUuid``, never one starting with ``-``: command-line parsers take
    it for an option (1 fresh machine in 64 failed to format its storage before this).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id
