"""The Kafka command-line tools of the stack's release, run from the cached jars.

``dualplane kafka topics --list`` is what ``kafka-topics.sh --bootstrap-server … --list`` is in a
Kafka tarball: the same class of the same release, with the bootstrap servers (and any security
settings) filled in from the settings when the tool takes them and the caller did not pass any.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from dualplane.core.settings import Settings
from dualplane.stack.kafka_dist import KafkaDistribution, template

# tool name -> (main class, how it takes the cluster address)
TOOLS: dict[str, tuple[str, str | None]] = {
    "topics": ("org.apache.kafka.tools.TopicCommand", "--bootstrap-server"),
    "consumer-groups": (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server",
    ),
    "console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server"),
    "console-producer": ("kafka.tools.ConsoleProducer", "--bootstrap-server"),
    "configs": ("kafka.admin.ConfigCommand", "--bootstrap-server"),
    "get-offsets": ("org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server"),
    "metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server"),
    "reassign-partitions": (
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "--bootstrap-server",
    ),
    "producer-perf-test": ("org.apache.kafka.tools.ProducerPerformance", None),
    "consumer-perf-test": ("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server"),
    "storage": ("kafka.tools.StorageTool", None),
}


def tool_command(settings: Settings, tool: str, args: list[str], command_config: Path | None) -> list[str]:
    """The ``java`` command line for ``tool`` with ``args``; raises KeyError for unknown tools."""
    main_class, address_flag = TOOLS[tool]
    extra: list[str] = []
    if address_flag and address_flag not in args:
        extra += [address_flag, settings.kafka.bootstrap_servers]
        if command_config is not None:
            extra += ["--command-config", str(command_config)]
    distribution = KafkaDistribution(settings.stack.kafka_version)
    distribution.install()
    log4j = Path(tempfile.gettempdir()) / "dualplane-kafka-tools-log4j.properties"
    log4j.write_text(template("kafka-tools-log4j.properties"))
    return distribution.java_command(
        main_class, *extra, *args, jvm_options=(f"-Dlog4j.configuration=file:{log4j}",)
    )


def java_security_properties(settings: Settings) -> dict[str, str]:
    """The settings' SASL/TLS options in the Java client's vocabulary (not librdkafka's).

    Covers SASL PLAIN/SCRAM and a PEM CA; tools that need a client certificate take their own
    ``--command-config`` file, which then wins.
    """
    kafka = settings.kafka
    properties: dict[str, str] = {"security.protocol": kafka.security_protocol}
    if kafka.sasl_mechanism is not None:
        module = "plain.PlainLoginModule" if kafka.sasl_mechanism == "PLAIN" else "scram.ScramLoginModule"
        password = kafka.sasl_password.get_secret_value() if kafka.sasl_password else ""
        properties["sasl.mechanism"] = kafka.sasl_mechanism
        properties["sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.{module} required "
            f'username="{kafka.sasl_username or ""}" password="{password}";'
        )
    if kafka.ssl_ca_location is not None:
        properties["ssl.truststore.type"] = "PEM"
        properties["ssl.truststore.location"] = str(kafka.ssl_ca_location)
    return properties


def run_tool(settings: Settings, tool: str, args: list[str]) -> int:
    """Run ``tool`` in the foreground, inheriting stdio; return its exit code."""
    with tempfile.NamedTemporaryFile("w", suffix=".properties") as command_config:
        config_path: Path | None = None
        if settings.kafka.security_protocol != "PLAINTEXT" and "--command-config" not in args:
            properties = java_security_properties(settings)
            command_config.write("".join(f"{k}={v}\n" for k, v in properties.items()))
            command_config.flush()
            config_path = Path(command_config.name)
        return subprocess.run(tool_command(settings, tool, args, config_path), check=False).returncode
