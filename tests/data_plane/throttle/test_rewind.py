"""Which event partitions are rewound after a recovery (pure logic; a recording stand-in consumer)."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

import pytest

from dualplane.data_plane.throttle.rewind import rewind_uncommitted

pytestmark = pytest.mark.unit


class TP(NamedTuple):
    topic: str
    partition: int


class RecordingConsumer:
    """Answers ``seek_to_committed`` like Faust's consumer and records every ``seek``."""

    def __init__(self, committed: dict[TP, int | None]) -> None:
        self.committed = committed
        self.seeks: list[tuple[TP, int]] = []

    async def seek_to_committed(self) -> dict[TP, int | None]:
        return self.committed

    async def seek(self, tp: TP, offset: int) -> None:
        self.seeks.append((tp, offset))


COMMITTED: dict[TP, int | None] = {
    TP("events", 0): None,  # its owner died before the group's first commit
    TP("events", 1): 0,  # pinned at the start of an empty topic
    TP("events", 2): 7,  # Faust's own seek handles it
    TP("windows-changelog", 0): None,  # not an event partition: recovery owns it
}


@pytest.mark.parametrize(("offset_reset", "expected"), [("earliest", [0, 1]), ("latest", [1])])
def test_only_event_partitions_without_a_committed_offset_go_back_to_their_start(
    offset_reset: str, expected: list[int]
) -> None:
    consumer = RecordingConsumer(COMMITTED)
    assert asyncio.run(rewind_uncommitted(consumer, "events", offset_reset)) == expected
    assert consumer.seeks == [(TP("events", p), 0) for p in expected]
