"""The frontier's rooms: what each feature adds to a shard, as table entries rather than branches.

A room owns one feature's message types (a handler each) and its periodic work (a :class:`Sweep`
each). :class:`~.service.Frontier` builds one handler table and one list of sweeps from its rooms,
binds its queue to exactly the message types in the table, and around each pass runs the sweeps
that are due. So the next feature adds a room (or an entry in one), not an ``isinstance`` branch
and a timer beside the exactly-once commit.

Handlers run inside the pass's SQLite transaction (a savepoint per message, see ``service``): what
they change is committed with the pass, or undone with the message alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Handler = Callable[[Any], None]
"""Handles one message of its type within the pass (raises MessageRejected to dead-letter it)."""

When = Literal["standby", "owner", "commit"]
"""When a sweep may run: each tick of a standby, each tick of the shard's owner, or after each
committed pass (what it holds goes out with the next pass's changelog)."""


@dataclass
class Sweep:
    """Periodic work: ``run`` at most once per ``every_s`` (each time it is looked at if 0)."""

    name: str
    every_s: float
    run: Callable[[], object]  # what it returns is not looked at
    when: When = "owner"
    last_s: float = field(default=0.0, repr=False)
    asked_at_s: float | None = field(default=None, repr=False)  # an earlier run asked for (see ask)

    def ask(self, at_s: float) -> None:
        """Run at ``at_s`` (monotonic) even if ``every_s`` has not passed by then."""
        self.asked_at_s = at_s

    def due(self, now_s: float) -> bool:
        """Whether to run now; a run restarts the period when the period made it due."""
        periodic = now_s - self.last_s >= self.every_s
        if periodic:
            self.last_s = now_s
        if periodic or (self.asked_at_s is not None and now_s >= self.asked_at_s):
            self.asked_at_s = None
            return True
        return False


class Room(Protocol):
    """One feature of a shard: the message types it handles and the sweeps it needs."""

    def handlers(self) -> Mapping[type, Handler]: ...

    def sweeps(self) -> Sequence[Sweep]: ...


def handler_table(rooms: Iterable[Room]) -> dict[type, Handler]:
    """Every room's handlers in one table; a message type has one owner, so a second is a bug."""
    table: dict[type, Handler] = {}
    for room in rooms:
        for kind, handler in room.handlers().items():
            if kind in table:
                raise ValueError(f"{kind.__name__} has two handlers: {table[kind]!r} and {handler!r}")
            table[kind] = handler
    return table


def sweep_list(rooms: Iterable[Room]) -> list[Sweep]:
    """Every room's sweeps, in room order; names are unique so that a listing can tell them apart."""
    sweeps = [sweep for room in rooms for sweep in room.sweeps()]
    names = [sweep.name for sweep in sweeps]
    if len(set(names)) != len(names):
        raise ValueError(f"two sweeps share a name: {sorted(names)}")
    return sweeps


def run_due(sweeps: Iterable[Sweep], when: When, now_s: float) -> None:
    """Run the sweeps for ``when`` that are due at ``now_s``, in order."""
    for sweep in sweeps:
        if sweep.when == when and sweep.due(now_s):
            sweep.run()
