"""Discovery batches, as the fetcher publishes a page's links: a link no URL field can hold is left
out. A probe's finding: a link of more than 8,192 characters failed the batch's validation, the
extractor resumed from its committed offsets and failed again (315 times), and the page's batch
never completed."""

from __future__ import annotations

import pytest

from dualplane.brokers.amqp.discovery import discovery_batches
from dualplane.brokers.amqp.messages import MAX_URL_CHARS
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import QueueSettings

pytestmark = pytest.mark.unit


def test_a_link_longer_than_a_url_may_be_is_left_out_and_the_others_go() -> None:
    longest = "http://a.test/q?" + "x" * (MAX_URL_CHARS - len("http://a.test/q?"))
    links = ["http://a.test/one", longest + "x", longest, "http://b.test/two"]
    batches = list(discovery_batches(Topology(QueueSettings()), "job", links, depth=1))
    published = sorted(url for _, batch in batches for url in batch.urls)
    assert published == sorted(["http://a.test/one", longest, "http://b.test/two"])
