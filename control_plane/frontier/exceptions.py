"""Errors of the frontier; every message names the state or input that was wrong and what to do."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class FrontierError(DualplaneError):
    """Base class of the frontier's errors."""


class SeenSetCorrupt(FrontierError):
    """The seen set's files on disk do not agree; the message says which file to restore."""


class ChangelogUnavailable(FrontierError):
    """The shard's changelog in Kafka cannot be written or read (Kafka away, or another frontier
    fenced this one); the frontier stops acting for the shard and starts over from the changelog."""


class ScopeTooWide(FrontierError):
    """A job's seeds span more domains than a default scope may hold; the message names the options."""


class ReshardRefused(FrontierError):
    """Resharding cannot start safely now (a service is still consuming); the message says what to stop."""


class RobotsPending(FrontierError):
    """A discovery message needs robots.txt files still being fetched: it waits, unacked, and is
    handled once they are known, while the shard goes on with its other messages."""

    def __init__(self, origins: set[str]) -> None:
        super().__init__(f"waiting for robots.txt of {', '.join(sorted(origins))}")
        self.origins = frozenset(origins)


class UnknownMonitor(FrontierError):
    """No frontier shard published a monitor of that id."""


class UnknownJob(FrontierError):
    """No frontier shard published progress for a job of that id; the message says how to find the id."""


class CancelUnconfirmed(FrontierError):
    """``job cancel --wait`` ran out of time before every running fetcher confirmed the cancel; the
    message says how many did and what to check."""


class PauseUnconfirmed(FrontierError):
    """``job pause --wait`` ran out of time before every shard recorded the pause and every running
    fetcher confirmed it; the message says how far it got and what to check."""
