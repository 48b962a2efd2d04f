"""``--namespace demo`` names exactly where the demo crawled: one function says both."""

from __future__ import annotations

import pytest

from dualplane.core.settings import Settings
from dualplane.demo.crawl import DEMO_NAMESPACE, demo_settings
from dualplane.namespaces import named_namespace

pytestmark = pytest.mark.unit


def test_the_demo_namespace_is_where_the_demo_crawls() -> None:
    settings = Settings()
    named, demo = named_namespace(settings, DEMO_NAMESPACE), demo_settings(settings)
    assert DEMO_NAMESPACE == "demo"
    assert named.topics == demo.topics and named.topics.records == "dualplane-demo.records"
    assert named.queues == demo.queues
    assert named.kafka.group_prefix == demo.kafka.group_prefix
    assert named.frontier_dir == demo.frontier_dir


@pytest.mark.parametrize("name", ["", "Demo", "a.b", "x" * 41, "-demo"])
def test_a_namespace_name_is_checked(name: str) -> None:
    with pytest.raises(ValueError, match="is no namespace name"):
        named_namespace(Settings(), name)
