"""The room of discovery waiting for robots.txt: messages held, unacked, until their files arrive.

Admission raises :class:`~.exceptions.RobotsPending` for a discovery message whose sites' robots.txt
files are still being fetched (a fetch must not block the pass). The frontier hands such a
delivery here instead of settling it; at the start of a later pass, those whose files have all
arrived (or turned out unreachable) go back to the front of the inbox and are handled afresh. The
jobs' progress snapshots count what waits, and what waits on a robots.txt being retried.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from dualplane.brokers.amqp.consumer import Delivery
from dualplane.control_plane.frontier.jobs import JobSnapshots
from dualplane.control_plane.frontier.robots import RobotsCache
from dualplane.control_plane.frontier.rooms import Handler, Sweep


class RobotsWaiting:
    """Deliveries held for the robots.txt files of the origins they wait for."""

    def __init__(self, robots: RobotsCache, snapshots: JobSnapshots) -> None:
        self.robots = robots
        self.snapshots = snapshots
        self._waiting: list[tuple[Delivery, frozenset[str]]] = []

    def handlers(self) -> Mapping[type, Handler]:
        return {}  # it holds other rooms' messages, it takes none of its own

    def sweeps(self) -> Sequence[Sweep]:
        return ()  # looked at once per pass (ready), not on a timer

    def hold(self, delivery: Delivery, origins: frozenset[str]) -> None:
        self._waiting.append((delivery, origins))
        self._count()

    def ready(self) -> list[Delivery]:
        """Deliveries whose robots.txt files have all arrived, taken from the room."""
        if not self._waiting:
            return []
        fetching = self.robots.fetching
        still = [(d, origins) for d, origins in self._waiting if any(fetching(o) for o in origins)]
        ready: list[Delivery] = []
        if len(still) < len(self._waiting):
            waiting = {id(d) for d, _ in still}
            ready = [d for d, _ in self._waiting if id(d) not in waiting]
            self._waiting = still
        self._count()  # also when an origin's robots.txt turned out unreachable meanwhile
        return ready

    def clear(self) -> None:
        """The connection is gone: the broker delivers them again."""
        self._waiting.clear()
        self.snapshots.robots_waiting({})

    def _count(self) -> None:
        counts: Counter[str] = Counter(getattr(d.message, "job_id", "") for d, _ in self._waiting)
        retrying: Counter[str] = Counter(
            getattr(d.message, "job_id", "")
            for d, origins in self._waiting
            if any(self.robots.retrying(origin) for origin in origins)
        )
        self.snapshots.robots_waiting(counts, retrying)
