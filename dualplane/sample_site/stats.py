"""The site's own view of its traffic: a request log, status counts, concurrency and rates per host.

Recorders are written from the site's event loop and read from any thread, hence the locks.
Requests to the ``/_…`` endpoints are never recorded.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

LOG_LIMIT = 1_000_000
HISTOGRAM_S = 60
RATE_WINDOW_S = 10

Blocked = Literal["429", "captcha"]


@dataclass(frozen=True)
class LogEntry:
    """One request as the site saw it; ``time`` is epoch seconds when the response was sent.

    ``client`` is the peer's address: which of several crawler machines (containers) asked.
    """

    time: float
    host: int
    method: str
    path: str
    status: int
    user_agent: str
    duration_ms: float
    blocked: Blocked | None = None
    client: str = ""


@dataclass(frozen=True)
class HostStats:
    """Traffic of one host since the last reset.

    ``challenges`` counts captcha pages (served with status 200). ``rate_1s`` and ``rate_10s`` are
    requests per second over the last 1 and 10 s; ``histogram_60s`` counts requests in each of the
    last 60 whole seconds, oldest first, the current (partial) second last.
    """

    host: int
    url: str
    total_requests: int
    by_status: dict[str, int]
    challenges: int
    in_flight: int
    max_in_flight: int
    rate_1s: float
    rate_10s: float
    histogram_60s: list[int]


@dataclass(frozen=True)
class SiteStats:
    """Per-host stats plus site totals; ``max_in_flight`` is the most requests in flight at once site-wide."""

    hosts: list[HostStats]
    max_in_flight: int

    @property
    def total_requests(self) -> int:
        return sum(host.total_requests for host in self.hosts)

    @property
    def by_status(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for host in self.hosts:
            total.update(host.by_status)
        return dict(sorted(total.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "total_requests": self.total_requests,
            "by_status": self.by_status,
            "max_in_flight": self.max_in_flight,
            "hosts": [asdict(host) for host in self.hosts],
        }


class HostRecorder:
    """Counts and logs the requests of one host. ``clock`` is monotonic seconds (injectable for tests)."""

    def __init__(self, host: int, url: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.host, self.url, self._clock = host, url, clock
        self._lock = threading.Lock()
        self._in_flight = 0
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._max_in_flight = self._in_flight
        self._by_status: Counter[int] = Counter()
        self._challenges = 0
        self._log: deque[LogEntry] = deque(maxlen=LOG_LIMIT)
        self._recent: deque[float] = deque()
        self._per_second: Counter[int] = Counter()

    def started(self) -> int:
        """A request arrived; returns how many are now in flight on this host."""
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            return self._in_flight

    def finished(self, entry: LogEntry) -> None:
        """The request that :meth:`started` has been answered with ``entry``."""
        now = self._clock()
        with self._lock:
            self._in_flight -= 1
            self._by_status[entry.status] += 1
            self._challenges += entry.blocked == "captcha"
            self._log.append(entry)
            self._recent.append(now)
            self._per_second[int(now)] += 1
            self._trim(now)

    def reset(self) -> None:
        """Forget everything but the requests in flight right now."""
        with self._lock:
            self._reset_counters()

    def entries(self) -> list[LogEntry]:
        with self._lock:
            return list(self._log)

    def snapshot(self) -> HostStats:
        now = self._clock()
        with self._lock:
            self._trim(now)
            last_second = sum(1 for stamp in self._recent if stamp > now - 1)
            second = int(now)
            return HostStats(
                host=self.host,
                url=self.url,
                total_requests=sum(self._by_status.values()),
                by_status={str(status): count for status, count in sorted(self._by_status.items())},
                challenges=self._challenges,
                in_flight=self._in_flight,
                max_in_flight=self._max_in_flight,
                rate_1s=float(last_second),
                rate_10s=len(self._recent) / RATE_WINDOW_S,
                histogram_60s=[
                    self._per_second.get(s, 0) for s in range(second - HISTOGRAM_S + 1, second + 1)
                ],
            )

    def _trim(self, now: float) -> None:
        while self._recent and self._recent[0] <= now - RATE_WINDOW_S:
            self._recent.popleft()
        if len(self._per_second) > HISTOGRAM_S:
            for second in [s for s in self._per_second if s <= int(now) - HISTOGRAM_S]:
                del self._per_second[second]


class SiteRecorder:
    """The recorders of every host, plus the site-wide concurrency peak."""

    def __init__(self, urls: list[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.hosts = [HostRecorder(host, url, clock) for host, url in enumerate(urls)]
        self._lock = threading.Lock()
        self._in_flight = 0
        self._max_in_flight = 0

    def started(self, host: int) -> None:
        self.hosts[host].started()
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def finished(self, entry: LogEntry) -> None:
        self.hosts[entry.host].finished(entry)
        with self._lock:
            self._in_flight -= 1

    def reset(self) -> None:
        for recorder in self.hosts:
            recorder.reset()
        with self._lock:
            self._max_in_flight = self._in_flight

    def snapshot(self) -> SiteStats:
        with self._lock:
            peak = self._max_in_flight
        return SiteStats([recorder.snapshot() for recorder in self.hosts], peak)

    def entries(self, host: int | None = None) -> list[LogEntry]:
        """The request log of one host, or of all hosts merged in time order."""
        if host is not None:
            return self.hosts[host].entries()
        return sorted(
            (entry for recorder in self.hosts for entry in recorder.entries()), key=lambda e: e.time
        )
