"""robots.txt per origin, fetched by the guarded client, parsed with Protego, cached with a TTL (RFC 9309).

The fetch goes through :class:`~core.web.client.GuardedClient`, as every request the crawler makes
on its own account: the SSRF guard checks each redirect hop (a robots.txt redirecting to 127.0.0.2
was followed there), one deadline covers the whole answer (a server trickling its head a byte a
second held the frontier's shard for as long as it liked), and the body is capped at 500 KiB.
Fetches run on the client's own thread: :meth:`RobotsCache.ready` starts one and returns at once,
so a shard keeps serving its other sites while one site's robots.txt is slow.

An unreachable robots.txt (5xx, 429, a timeout, a network error) is asked again with backoff
(``RETRY_DELAYS_S``, about 5 minutes in all, as RFC 9309 section 2.3.1.4 allows) before the origin
counts as disallowed: meanwhile :meth:`RobotsCache.ready` says "not known yet", so the frontier keeps
the URLs waiting (the job shows "robots.txt unreachable, retrying") and admits them once it answers.
A robots.txt that answered 503 once used to end the job with every seed "disallowed".
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, wait
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

from protego import Protego

from dualplane.core.web.client import GuardedClient, HttpAnswer
from dualplane.core.web.client_thread import ClientThread
from dualplane.core.web.exceptions import OutboundFailed, UnsafeUrl
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import domain_of

MAX_ROBOTS_BYTES = 500 * 1024
"""RFC 9309 asks parsers to read at least 500 KiB; we read that much, up to its last whole line."""

MAX_REDIRECTS = 5
"""RFC 9309: follow at least five consecutive redirects; past that the file counts as unavailable."""

RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 60.0, 60.0, 60.0)
"""Waits before asking an unreachable robots.txt again; once spent, the origin is disallowed for
``error_ttl_s``. About 5 minutes in all: less than RabbitMQ's 30-minute limit on the unacked
discovery that waits meanwhile."""


@dataclass(frozen=True)
class RobotsVerdict:
    """May the crawler fetch a URL, at what pace, and why (the reason is logged with the URL)."""

    allowed: bool
    crawl_delay_s: float | None
    reason: str


@dataclass(frozen=True)
class _Policy:
    """What one origin's robots.txt says: parsed rules, or a blanket allow/deny with its reason."""

    rules: Protego | None
    allow_all: bool
    reason: str
    expires_at: float
    unreachable: bool = False

    def verdict(self, url: str, user_agent: str) -> RobotsVerdict:
        if self.rules is None:
            return RobotsVerdict(self.allow_all, None, self.reason)
        delay_s = self.rules.crawl_delay(user_agent)
        if self.rules.can_fetch(url, user_agent):
            return RobotsVerdict(True, delay_s, "allowed by robots.txt")
        return RobotsVerdict(False, delay_s, f"disallowed by robots.txt for user agent {user_agent!r}")


class RobotsCache:
    """Answers "may ``user_agent`` fetch this URL?" from each origin's robots.txt, fetched on demand.

    RFC 9309 semantics: a 2xx file is obeyed; 4xx (including 404) means no rules, everything
    allowed; 5xx, 429 (as Google treats it: the server is struggling), a network error, a timeout
    or a redirect the SSRF guard refuses mean "unreachable": asked again after each of
    ``retry_delays_s`` (the origin is "not known yet" meanwhile, see :meth:`retrying`), then
    everything disallowed until ``error_ttl_s`` passes. Good answers are cached for ``ttl_s``; at
    most ``max_domains`` origins are kept, least recently used first out. A fetch takes at most
    ``fetch_timeout_s``, all in.

    :meth:`ready` never blocks: a verdict when the origin's file is known, else None while it is
    fetched in the background (``on_ready`` is called when it arrives). :meth:`check` blocks on the
    fetch. Thread-safe. Pass ``client`` to share one guarded client (it is not closed by
    :meth:`close`); ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        user_agent: str,
        *,
        guard: SsrfGuard | None = None,
        ttl_s: float = 86400,
        error_ttl_s: float = 300,
        fetch_timeout_s: float = 10,
        max_domains: int = 100_000,
        client: ClientThread | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_ready: Callable[[], None] | None = None,
        retry_delays_s: Sequence[float] = RETRY_DELAYS_S,
    ) -> None:
        if max_domains < 1:
            raise ValueError(f"max_domains must be >= 1, got {max_domains}")
        self.user_agent = user_agent
        self.ttl_s = ttl_s
        self.error_ttl_s = error_ttl_s
        self.fetch_timeout_s = fetch_timeout_s
        self.max_domains = max_domains
        self.on_ready = on_ready
        self._owns_client = client is None
        self._client = client or ClientThread(
            GuardedClient(guard or SsrfGuard(), user_agent=user_agent), name="robots.txt"
        )
        self._clock = clock
        self._policies: OrderedDict[str, _Policy] = OrderedDict()
        self._in_flight: dict[str, Future[HttpAnswer]] = {}
        self.retry_delays_s = tuple(retry_delays_s)
        self._attempts: dict[str, int] = {}  # origin -> unreachable answers in a row
        self._retrying: dict[str, tuple[str, threading.Timer]] = {}  # origin -> (why, its next ask)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RobotsCache(user_agent={self.user_agent!r}, ttl_s={self.ttl_s}, origins={len(self)})"

    def __len__(self) -> int:
        return len(self._policies)

    @staticmethod
    def origin_of(url: str) -> str:
        """``scheme://host[:port]`` of ``url``: what one robots.txt covers. InvalidUrl for a bad URL."""
        domain = domain_of(url)  # validates first: urlsplit() below then cannot fail
        return f"{urlsplit(url.strip()).scheme.lower()}://{domain}"

    def check(self, url: str) -> RobotsVerdict:
        """The verdict for ``url`` (http or https), fetching its origin's robots.txt when not cached.

        Never raises for a bad robots.txt or an unreachable server (that is a verdict); raises
        :class:`~core.web.exceptions.InvalidUrl` when ``url`` itself is not an http(s) URL.
        """
        origin = self.origin_of(url)
        policy = self._cached(origin)
        why = self.retrying(origin)
        if policy is None and why is not None:  # waiting to ask again: unreachable for now
            return RobotsVerdict(False, None, why)
        if policy is None:
            fetch = self._start(origin)
            wait([fetch])  # bounded by the fetch's own deadline; a failure is a verdict (_policy)
            policy = self._settle(origin, fetch)
        return policy.verdict(url, self.user_agent)

    def ready(self, url: str) -> RobotsVerdict | None:
        """The verdict for ``url`` if its origin's robots.txt is known, else None and a fetch started."""
        origin = self.origin_of(url)
        policy = self._cached(origin)
        if policy is None:
            if self.retrying(origin) is None:
                self._start(origin)
            return None
        return policy.verdict(url, self.user_agent)

    def fetching(self, origin: str) -> bool:
        """Whether ``origin``'s robots.txt is being fetched, or waits to be asked again."""
        with self._lock:
            return origin in self._in_flight or origin in self._retrying

    def retrying(self, origin: str) -> str | None:
        """Why ``origin``'s robots.txt is unreachable while it waits to be asked again, else None."""
        with self._lock:
            retrying = self._retrying.get(origin)
        return retrying[0] if retrying else None

    def close(self) -> None:
        """Close the HTTP client if this cache created it; no robots.txt is asked again."""
        with self._lock:
            timers = [timer for _why, timer in self._retrying.values()]
            self._retrying.clear()
        for timer in timers:
            timer.cancel()
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> RobotsCache:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _cached(self, origin: str) -> _Policy | None:
        with self._lock:
            policy = self._policies.get(origin)
            if policy is not None and policy.expires_at > self._clock():
                self._policies.move_to_end(origin)
                return policy
        return None

    def _start(self, origin: str) -> Future[HttpAnswer]:
        """The origin's fetch under way, started unless it was already (one fetch per origin)."""
        with self._lock:
            fetch = self._in_flight.get(origin)
            if fetch is not None:
                return fetch
            fetch = self._client.get(
                f"{origin}/robots.txt",
                deadline_s=self.fetch_timeout_s,
                max_bytes=MAX_ROBOTS_BYTES,
                max_redirects=MAX_REDIRECTS,
            )
            self._in_flight[origin] = fetch
        fetch.add_done_callback(lambda done: self._arrived(origin, done))
        return fetch

    def _arrived(self, origin: str, fetch: Future[HttpAnswer]) -> None:
        """On the client's thread: keep the policy, then tell whoever waits for it."""
        self._settle(origin, fetch)
        if self.on_ready is not None:
            self.on_ready()

    def _settle(self, origin: str, fetch: Future[HttpAnswer]) -> _Policy:
        """The policy ``fetch`` gave, stored once (the waiter and the done callback both come here)."""
        with self._lock:
            if self._in_flight.get(origin) is not fetch:
                stored = self._policies.get(origin)
                if stored is not None:
                    return stored
        policy = self._policy(fetch)
        with self._lock:
            if self._in_flight.get(origin) is fetch:
                del self._in_flight[origin]
                if policy.unreachable and self._retry_later(origin, policy.reason):
                    return policy
                self._attempts.pop(origin, None)
                self._policies[origin] = policy
                self._policies.move_to_end(origin)
                while len(self._policies) > self.max_domains:
                    self._policies.popitem(last=False)
        return policy

    def _retry_later(self, origin: str, reason: str) -> bool:
        """Under the lock: schedule the next ask of an unreachable robots.txt; False once spent."""
        attempt = self._attempts.get(origin, 0)
        if attempt >= len(self.retry_delays_s):
            return False
        self._attempts[origin] = attempt + 1
        delay_s = self.retry_delays_s[attempt]
        why = reason.replace("; everything disallowed for now", f"; retrying in {delay_s:g} s")
        timer = threading.Timer(delay_s, self._ask_again, (origin,))
        timer.daemon = True
        self._retrying[origin] = (why, timer)
        timer.start()
        return True

    def _ask_again(self, origin: str) -> None:
        """On the timer's thread: fetch the robots.txt again (unless closed meanwhile)."""
        with self._lock:
            if self._retrying.pop(origin, None) is None:
                return
        try:
            self._start(origin)
        except RuntimeError:  # the client closed between the timer and now: nobody needs the answer
            return
        if self.on_ready is not None:
            self.on_ready()

    def _policy(self, fetch: Future[HttpAnswer]) -> _Policy:
        try:
            answer = fetch.result()
        except (OutboundFailed, UnsafeUrl, CancelledError) as error:  # CancelledError: at shutdown
            return self._unreachable(f"{type(error).__name__}: {error}")
        now = self._clock()
        status = answer.status
        if 200 <= status < 300:
            rules = Protego.parse(_whole_lines(answer).decode("utf-8-sig", errors="replace"))
            return _Policy(rules, True, "robots.txt", now + self.ttl_s)
        if status == 429 or status >= 500:
            return self._unreachable(f"HTTP {status}")
        after = f" after {answer.redirects} redirects" if answer.redirects else ""
        reason = f"robots.txt unavailable (HTTP {status}{after}): everything allowed"
        return _Policy(None, True, reason, now + self.ttl_s)

    def _unreachable(self, why: str) -> _Policy:
        reason = f"robots.txt unreachable: {why}; everything disallowed for now"
        return _Policy(None, False, reason, self._clock() + self.error_ttl_s, unreachable=True)


def _whole_lines(answer: HttpAnswer) -> bytes:
    """The body, without the partial line the size cap cut: ``Disallow: /private/x`` cut after its
    first slash would read as ``Disallow: /``, and forbid the whole site."""
    if not answer.truncated:
        return answer.body
    end = max(answer.body.rfind(b"\n"), answer.body.rfind(b"\r"))
    return answer.body[: end + 1]
