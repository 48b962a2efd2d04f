"""The per-domain limits the fleet obeys, and the contract of whatever keeps them current.

The frontier and every fetcher ask a :class:`LimitsSource` for a domain's limits before they
admit or start work. The throttle stage implements it (``data_plane.throttle.view.ThrottleView``:
the compacted ``throttle.state`` topic at startup, the throttle exchange after), and the services
registry wires one into each service, so neither stage imports the throttle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

DEFAULT_SOURCE = "default"


@dataclass(frozen=True)
class Limits:
    """What a fetcher or the frontier applies to one domain, and where it came from."""

    concurrency: int
    delay_ms: int
    paused: bool
    source: str = DEFAULT_SOURCE  # "default", "auto" (the throttle processor) or an override's source
    reason: str = ""

    def as_tuple(self) -> tuple[int, int, bool]:
        return self.concurrency, self.delay_ms, self.paused


class OnChange(Protocol):
    """Called (on the source's own thread) when a domain's limits changed."""

    def __call__(self, domain: str, limits: Limits) -> None: ...


class LimitsSource(Protocol):
    """Per-domain limits, kept current by someone else; every method is thread-safe."""

    def start(self, timeout_s: float = 30.0) -> object:
        """Block until the current limits are known (a restarted process starts from them)."""
        ...

    def details(self, domain: str) -> Limits:
        """The limits for ``domain`` right now (the defaults when nothing says otherwise)."""
        ...

    def domains(self) -> set[str]:
        """Domains with limits of their own (throttled or overridden, expired or not)."""
        ...

    def subscribe(self, on_change: OnChange) -> None:
        """Call ``on_change`` whenever a domain's limits change; set before :meth:`start`."""
        ...

    def close(self) -> None:
        """Stop keeping the limits current."""
        ...


def cooldown_s(retry_after_s: float | None, base_ms: int, cap_ms: int) -> float:
    """How long the fleet leaves a domain alone after it pushed back (429, 403, a challenge).

    The one owner of that rule: a fetcher's local hold after the answer
    (``control_plane.fetcher.politeness``) and the throttle policy's "no climbing before" after a
    window with a Retry-After (``data_plane.throttle.policy``) both ask here, so they never disagree.
    The server's Retry-After when it gave one, else ``base_ms``
    (``DUALPLANE_THROTTLE_COOLDOWN_BASE_MS``); never more than ``cap_ms``
    (``DUALPLANE_THROTTLE_COOLDOWN_CAP_MS``): a Retry-After of a day is a ban or a mistake, and a
    longer rest is the throttle's pause to decide, from the block ratio, not one answer's header.
    """
    wanted_s = retry_after_s if retry_after_s is not None and retry_after_s > 0 else base_ms / 1000
    return min(wanted_s, cap_ms / 1000)
