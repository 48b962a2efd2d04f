"""Proxy rotation: round-robin over a pool, with quarantine of proxies that look banned."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.settings import mask_url_password

log = logging.getLogger(__name__)

# Outcomes that say "this exit address is blocked or dead", not "this page is bad". A timeout is
# left out: slow targets time out through healthy proxies too.
QUARANTINE_OUTCOMES = frozenset(
    {Outcome.RATE_LIMITED, Outcome.FORBIDDEN, Outcome.BLOCKED_CHALLENGE, Outcome.CONNECTION_ERROR}
)


class ProxyPool:
    """Hands out proxy URLs (``http://user:pass@host:port``) in turn, skipping quarantined ones.

    A proxy reported with an outcome in :data:`QUARANTINE_OUTCOMES` is skipped for
    ``quarantine_s`` seconds of ``clock`` (a monotonic clock in seconds); reports about a proxy
    already in quarantine do not extend it, so one burst of failures costs one quarantine.
    Not thread-safe: use it from one event loop.
    """

    def __init__(
        self,
        proxies: Sequence[str],
        *,
        quarantine_s: float = 600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not proxies or len(set(proxies)) != len(proxies):
            raise ValueError(f"a ProxyPool needs at least one proxy and no duplicates, got {len(proxies)}")
        if quarantine_s < 0:
            raise ValueError(f"quarantine_s must be >= 0, got {quarantine_s}")
        self.proxies = tuple(proxies)
        self.quarantine_s = quarantine_s
        self._clock = clock
        self._next = 0
        self._until: dict[str, float] = {}

    def acquire(self) -> str | None:
        """The next usable proxy in turn, or None when every proxy is in quarantine."""
        for _ in self.proxies:
            proxy = self.proxies[self._next]
            self._next = (self._next + 1) % len(self.proxies)
            if self._usable(proxy):
                return proxy
        return None

    def report(self, proxy: str, outcome: Outcome) -> None:
        """Record how a fetch through ``proxy`` ended; quarantine it on a ban-like outcome."""
        if proxy not in self.proxies:
            raise ValueError(f"{mask_url_password(proxy)} is not in this pool")
        if outcome not in QUARANTINE_OUTCOMES or not self._usable(proxy):
            return
        self._until[proxy] = self._clock() + self.quarantine_s
        log.warning(
            "proxy %s quarantined for %.0f s after %s (%d of %d left)",
            mask_url_password(proxy),
            self.quarantine_s,
            outcome,
            len(self.healthy()),
            len(self.proxies),
        )

    def healthy(self) -> tuple[str, ...]:
        """Proxies not in quarantine now, in pool order."""
        return tuple(proxy for proxy in self.proxies if self._usable(proxy))

    def seconds_until_next(self) -> float:
        """How long until a quarantined proxy returns (0 when one is usable now)."""
        if self.healthy():
            return 0.0
        return max(0.0, min(self._until.values()) - self._clock())

    def _usable(self, proxy: str) -> bool:
        until = self._until.get(proxy)
        if until is None:
            return True
        if self._clock() < until:
            return False
        del self._until[proxy]
        log.info("proxy %s is back from quarantine", mask_url_password(proxy))
        return True
