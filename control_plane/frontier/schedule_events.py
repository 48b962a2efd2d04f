"""A monitor schedule's own change events: ``new`` and ``gone``, beside the extractor's ``changed``.

- ``new``: a URL joined a monitor's schedule on a visit after its first (a page linked anew, a
  redirect's target taking its source's place).
- ``gone``: a URL answered 404 or 410 on ``DUALPLANE_FRONTIER_MONITOR_GONE_AFTER`` visits in a row and
  left the schedule: it is not revisited any more.

They are ``change_event`` records (v2, ``kind``) on ``DUALPLANE_TOPIC_CHANGES``, keyed by URL, written in
the Kafka transaction of the pass that changed the schedule (with its changelog rows), so an event is
published exactly when its schedule change is. ``changes tail`` and ``decode_change`` read them with
the extractor's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from dualplane.brokers.amqp.messages import new_id
from dualplane.control_plane.frontier.jobs import SideRecord

Kind = Literal["new", "gone"]
WATCHED = ("price", "currency", "availability", "title", "text_fingerprint")
Encode = Callable[[Mapping[str, Any]], bytes]


class ScheduleEvents:
    """The events a pass made, waiting for its changelog transaction (:meth:`drain`)."""

    def __init__(self, topic: str, encode: Encode, clock: Callable[[], float] = time.time) -> None:
        self.topic = topic
        self.encode = encode
        self.clock = clock
        self._pending: list[SideRecord] = []

    def add(self, kind: Kind, job_id: str, url: str, last_visit_s: int | None = None) -> None:
        """Note a ``kind`` event of ``url`` (``last_visit_s``: its last visit that found the page)."""
        now = datetime.fromtimestamp(self.clock(), UTC)
        previous = datetime.fromtimestamp(last_visit_s, UTC) if last_visit_s is not None else now
        record: dict[str, Any] = {
            name: None for field in WATCHED for name in (f"{field}_from", f"{field}_to")
        }
        record.update(url=url, canonical_url=url, job_id=job_id, trace_id=new_id(), fetched_at=now,
                      previous_fetched_at=previous, changed=[], kind=kind)  # fmt: skip
        self._pending.append((self.topic, url, self.encode(record)))

    def mark(self) -> int:
        """Where the events of the message being handled start (see :meth:`undo_to`)."""
        return len(self._pending)

    def undo_to(self, mark: int) -> None:
        """The message being handled was rolled back: drop the events it made."""
        del self._pending[mark:]

    def drain(self) -> list[SideRecord]:
        """The pass's events, for its changelog transaction; none are kept."""
        pending, self._pending = self._pending, []
        return pending
