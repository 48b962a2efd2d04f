"""Records read from outside Python: examples/java-consumer (Kafka's Java client, Apache Avro's decoder).

The example resolves writer schemas from the schema topic alone, reads committed records only, and
decodes every schema version of ``page_record`` the platform has written. Needs ``java`` and ``mvn``
(``scripts/setup.sh`` installs both) and Maven Central for the first dependency download.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from dualplane import schemas
from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.schema_topic import publish_schemas
from dualplane.core.settings import Settings
from tests.schemas.test_codec import page_record
from tests.support.factories import KafkaTopicFactory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "java-consumer"


@pytest.fixture(scope="module")
def java_classpath() -> Iterator[str]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.fail(
                f"{tool} is missing: run scripts/setup.sh (it installs Java and Maven)", pytrace=False
            )
    lib = EXAMPLE / "target" / "lib"
    if not any(lib.glob("avro-*.jar")):
        fetched = subprocess.run(
            ["mvn", "-B", "-q", "-f", str(EXAMPLE / "pom.xml"), "dependency:copy-dependencies",
             f"-DoutputDirectory={lib}"],
            capture_output=True, text=True, timeout=280, check=False,
        )  # fmt: skip
        assert fetched.returncode == 0, fetched.stdout[-2000:] + fetched.stderr[-2000:]
    yield f"{lib}/*"


def _record(version: int, index: int, price: str) -> dict[str, object]:
    record = page_record(version)
    record["url"] = f"https://shop.example.com/p/{index}"
    record["job_id"] = "job-java"
    record["product"] = {**record["product"], "price": Decimal(price), "sku": f"SKU-{index}"}
    return record


def test_java_consumer_reads_committed_records_of_every_version(
    settings: Settings, kafka_topics: KafkaTopicFactory, java_classpath: str
) -> None:
    records_topic = kafka_topics.create("java-records", partitions=2)
    schemas_topic = kafka_topics.create("java-schemas", config={"cleanup.policy": "compact"})
    publish_schemas(settings.kafka, schemas_topic)
    versions = sorted({s.version for s in schemas.all_schemas() if s.name == "page_record"})
    expected = {
        f"https://shop.example.com/p/{i}": (_record(v, i, f"{10 + i}.50"), v)
        for i, v in enumerate(versions * 2)
    }
    producer = clients.producer(settings.kafka, **{"transactional.id": f"java-test-{time.monotonic_ns()}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for record, version in expected.values():
        producer.produce(records_topic, schemas.encode("page_record", record, version), key=record["url"])
    producer.commit_transaction(30)
    # An aborted transaction's record: read_committed must never show it.
    producer.begin_transaction()
    aborted = _record(versions[-1], 999, "1.00")
    producer.produce(records_topic, schemas.encode("page_record", aborted), key=b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)

    run = subprocess.run(
        ["java", "-cp", java_classpath, str(EXAMPLE / "RecordsConsumer.java"),
         "--bootstrap", settings.kafka.bootstrap_servers, "--topic", records_topic,
         "--schemas-topic", schemas_topic, "--idle-ms", "4000"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert sorted(line["url"] for line in lines) == sorted(expected)
    for line in lines:
        record, version = expected[line["url"]]
        product = record["product"]
        assert line["schema_version"] == version
        assert line["job_id"] == "job-java" and line["title"] == record["title"]
        assert Decimal(line["product"]["price"]) == product["price"]  # type: ignore[index]
        assert line["product"]["sku"] == product["sku"]  # type: ignore[index]
        assert line["product"]["currency"] == "EUR" and line["product"]["availability"] == "in_stock"
    assert f"read {len(expected)} record(s)" in run.stderr
