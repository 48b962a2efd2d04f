"""Rewind the event partitions Faust's own seek leaves where a dropped fetch moved them.

While a rebalance recovers the tables, Faust's consumer can take records from aiokafka and drop
them (flow stopped, partition not active yet); aiokafka's position has moved past them all the
same. Faust undoes that by seeking every partition back to its committed offset once recovery is
done, but aiokafka's ``seek_to_committed`` seeks only when the committed offset is above 0. A
partition whose group has committed nothing yet (an owner killed before its first commit) keeps the
moved position, and the events its dead owner had counted but not committed are never read again:
the windows lack them for good. Measured: test_a_rebalance_moves_windows_to_the_surviving_worker
found the surviving worker at offset 19 of 19 after recovery, having handled none of them, in about
1 run in 4 once events were processed fast enough to beat the first commit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)


async def rewind_uncommitted(consumer: Any, topic: str, offset_reset: str) -> list[int]:
    """Seek ``topic``'s assigned partitions that have no committed offset (or 0) to the start.

    ``consumer`` is the Faust app's consumer, called between recovery and the resumed flow. With
    ``latest``, a partition without any committed offset is left alone (there is no fixed start to
    go back to; :func:`brokers.kafka.group_start.pin_group_start` makes that case rare). Returns
    the partitions rewound.
    """
    committed: Mapping[Any, int | None] = await consumer.seek_to_committed()
    rewound = []
    for tp, offset in committed.items():
        if tp.topic != topic or (offset is not None and offset > 0):
            continue  # seek_to_committed moved it back already
        if offset is None and offset_reset != "earliest":
            continue
        await consumer.seek(tp, 0)  # below the log start, the reset policy takes it to the start
        rewound.append(tp.partition)
    rewound.sort()
    if rewound:
        log.info("rewound %s partitions %s to their start (nothing committed yet)", topic, rewound)
    return rewound
