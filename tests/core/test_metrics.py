"""Probes: metric families read at scrape time, cached, replaceable, and never failing a scrape."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, generate_latest

from dualplane.core import metrics

pytestmark = pytest.mark.unit


def _scrape() -> str:
    return generate_latest(REGISTRY).decode()


def test_a_probe_is_read_at_scrape_time_and_cached_for_its_ttl() -> None:
    reads: list[int] = []

    def read() -> list[metrics.Sample]:
        reads.append(1)
        return [({"queue": "lane"}, float(len(reads)))]

    metrics.probe("dualplane_test_depth", "test", read, labels=("queue",), ttl_s=60)
    try:
        assert reads == []  # registering reads nothing
        first, second = _scrape(), _scrape()
        # The probe's line, not the whole scrape: the gc counters in it move whenever a collection
        # runs between the two scrapes (they did in a full run of tests/core).
        assert 'dualplane_test_depth{queue="lane"} 1.0' in first
        assert 'dualplane_test_depth{queue="lane"} 1.0' in second
        assert len(reads) == 1
    finally:
        metrics.PROBES.remove("dualplane_test_depth")


def test_a_probe_registered_again_replaces_the_old_one_and_counters_get_total() -> None:
    metrics.probe("dualplane_test_pages", "test", metrics.value(lambda: 1), kind="counter")
    metrics.probe("dualplane_test_pages", "test", metrics.value(lambda: 7), kind="counter")
    try:
        text = _scrape()
        assert "dualplane_test_pages_total 7.0" in text and "dualplane_test_pages_total 1.0" not in text
    finally:
        metrics.PROBES.remove("dualplane_test_pages")


def test_a_failing_probe_leaves_the_rest_of_the_scrape_intact() -> None:
    def broken() -> list[metrics.Sample]:
        raise ConnectionError("management API away")

    metrics.probe("dualplane_test_broken", "test", broken)
    metrics.probe("dualplane_test_fine", "test", metrics.value(lambda: 3))
    try:
        text = _scrape()
        assert "dualplane_test_fine 3.0" in text and "dualplane_test_broken" not in text
    finally:
        metrics.PROBES.remove("dualplane_test_broken")
        metrics.PROBES.remove("dualplane_test_fine")
