"""The reassignment plan after a broker is lost: pure placement logic (the cluster test runs it for real)."""

from __future__ import annotations

import pytest

from dualplane.brokers.kafka.reassignment import plan

pytestmark = pytest.mark.unit


def test_a_lost_broker_is_replaced_in_place_by_the_least_loaded_live_one() -> None:
    replicas = {("pages.raw", 0): [1, 2, 3], ("pages.raw", 1): [2, 3, 1], ("records", 0): [3, 2, 4]}
    moves = plan(replicas, live={2, 3, 4})["partitions"]
    # Broker 4 holds one replica, 2 and 3 three each: both of 1's replicas go to 4, in 1's place.
    assert moves == [
        {"topic": "pages.raw", "partition": 0, "replicas": [4, 2, 3]},
        {"topic": "pages.raw", "partition": 1, "replicas": [2, 3, 4]},
    ]


def test_nothing_moves_on_a_whole_cluster_or_where_no_live_broker_is_free() -> None:
    assert plan({("t", 0): [1, 2, 3]}, live={1, 2, 3})["partitions"] == []
    assert plan({("t", 0): [1, 2, 3]}, live={2, 3})["partitions"] == []


def test_the_load_counts_what_the_plan_placed() -> None:
    replicas = {("t", p): [1, 2] for p in range(4)}
    moves = plan(replicas, live={2, 3, 4})["partitions"]
    assert sorted(move["replicas"][0] for move in moves) == [3, 3, 4, 4]
