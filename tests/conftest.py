"""Session brokers and per-test factories shared by the integration and end-to-end tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.core.settings import Settings
from tests.support.brokers import BrokerSession, BrokersUnavailable, open_brokers
from tests.support.factories import (
    AmqpQueueFactory,
    ControlPlaneFactory,
    KafkaClientFactory,
    KafkaTopicFactory,
    S3BucketFactory,
    closing,
)
from tests.support.pipeline import Pipeline


@pytest.fixture(scope="session")
def brokers() -> Iterator[BrokerSession]:
    """Real Kafka, RabbitMQ and S3 for the whole session (see tests/support/brokers.py)."""
    try:
        session = open_brokers()
    except BrokersUnavailable as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def settings(brokers: BrokerSession) -> Settings:
    return brokers.settings


@pytest.fixture
def kafka_topics(settings: Settings) -> Iterator[KafkaTopicFactory]:
    yield from closing(KafkaTopicFactory(settings))


@pytest.fixture
def kafka(settings: Settings) -> Iterator[KafkaClientFactory]:
    yield from closing(KafkaClientFactory(settings))


@pytest.fixture
def amqp_queues(settings: Settings) -> Iterator[AmqpQueueFactory]:
    yield from closing(AmqpQueueFactory(settings))


@pytest.fixture
def s3_buckets(settings: Settings) -> Iterator[S3BucketFactory]:
    yield from closing(S3BucketFactory(settings))


@pytest.fixture
def pipeline(settings: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    """Services as real processes (``dualplane run``) with the test's ``settings`` (a test module
    overrides that fixture for its own limits), all stopped at the end."""
    made = Pipeline(settings, tmp_path)
    yield made
    made.stop_all()


@pytest.fixture
def control_plane(settings: Settings, tmp_path: Path) -> Iterator[ControlPlaneFactory]:
    """``control_plane.settings()`` gives settings with a private RabbitMQ topology."""
    yield from closing(ControlPlaneFactory(settings, tmp_path))


# Tests marked ``opt_in`` (too long or not yet stable enough for CI, each says why) are deselected,
# and shown as such in the summary, unless this is set: never collected as a skip that looks run.
OPT_IN_VARIABLE = "DUALPLANE_TEST_OPT_IN"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(OPT_IN_VARIABLE) == "1":
        return
    deselected = [item for item in items if item.get_closest_marker("opt_in")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("opt_in")]


# CI (``.ci/run``) sets this: a skipped test there is a check that did not run, never a pass.
NO_SKIPS_VARIABLE = "DUALPLANE_TEST_NO_SKIPS"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get(NO_SKIPS_VARIABLE) != "1" or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        names = "\n".join(f"  {report.nodeid}: {report.longrepr}" for report in skipped[:20])
        print(f"\n{len(skipped)} test(s) skipped while {NO_SKIPS_VARIABLE}=1 (each must run in CI):\n{names}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
