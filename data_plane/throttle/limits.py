"""Pure bookkeeping of throttle commands: which command holds for a domain, and the limits it gives.

No I/O and no clock of its own (callers pass ``now``), so every rule is unit-testable:

- The processor's latest command (``source="auto"``) is the domain's standing state.
- An override (any other source, ``operator`` from ``dualplane throttle set``) wins until its
  ``ttl_s`` runs out; then the standing state applies again. An override without ``ttl_s`` holds
  until replaced; an operator clears one by sending a new one with ``ttl_s=0``.
- A processor pause carries ``ttl_s``: once it runs out the domain is no longer paused but keeps
  the command's concurrency and delay, so the fleet resumes carefully even if the processor is down.
  Any other expired processor command falls back to the defaults.
- A command for ``*`` (:data:`~data_plane.throttle.commands.ALL_DOMAINS`, the scraping API's quota)
  that pauses applies to every domain until it expires or a newer ``*`` command replaces it.
- Commands can arrive out of order (the compacted topic is read while the exchange already
  delivers): per domain and per kind, an older ``issued_at`` never replaces a newer one.
"""

from __future__ import annotations

from datetime import datetime

from dualplane.core.limits import Limits
from dualplane.data_plane.throttle.commands import ALL_DOMAINS, AUTO, ThrottleCommand


class LimitsBook:
    """The newest processor command and override per domain, and the limits they add up to."""

    def __init__(self, default_concurrency: int, default_delay_ms: int) -> None:
        self.defaults = Limits(default_concurrency, default_delay_ms, False)
        self.auto: dict[str, ThrottleCommand] = {}
        self.overrides: dict[str, ThrottleCommand] = {}

    def apply(self, command: ThrottleCommand) -> bool:
        """Record ``command``; False (and nothing changes) when a newer one of its kind is known."""
        slot = self.auto if command.source == AUTO else self.overrides
        known = slot.get(command.domain)
        if known is not None and known.issued_at > command.issued_at:
            return False
        slot[command.domain] = command
        return known != command

    def limits(self, domain: str, now: datetime) -> Limits:
        """The limits for ``domain`` at ``now``: a fleet-wide pause, an unexpired override, else the
        standing state."""
        fleet = self.overrides.get(ALL_DOMAINS)
        if fleet is not None and fleet.paused and not fleet.expired(now):
            return _from(fleet)
        override = self.overrides.get(domain)
        if override is not None and not override.expired(now):
            return _from(override)
        auto = self.auto.get(domain)
        if auto is None:
            return self.defaults
        if not auto.expired(now):
            return _from(auto)
        if auto.paused:
            return Limits(auto.concurrency, auto.delay_ms, False, AUTO, f"{auto.reason} (pause over)")
        return self.defaults

    def domains(self) -> set[str]:
        return set(self.auto) | set(self.overrides)


def _from(command: ThrottleCommand) -> Limits:
    return Limits(command.concurrency, command.delay_ms, command.paused, command.source, command.reason)
