"""robots.txt per origin, fetched with httpx, parsed with Protego, cached with a TTL (RFC 9309)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

import httpx
from protego import Protego

from core.web.urls import domain_of

MAX_ROBOTS_BYTES = 500 * 1024
"""RFC 9309 asks parsers to read at least 500 KiB; we read exactly that and drop the rest."""

MAX_REDIRECTS = 5
"""RFC 9309: follow at least five consecutive redirects; past that the file counts as unavailable."""


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
    allowed; 5xx, 429 (as Google treats it: the server is struggling), a network error or a
    timeout mean "unreachable", everything disallowed until ``error_ttl_s`` passes. Good answers
    are cached for ``ttl_s``; at most ``max_domains`` origins are kept, least recently used first out.

    ``check`` blocks on the fetch (at most about ``fetch_timeout_s`` per origin) on a cache miss. It
    is thread-safe; two threads missing the same origin at once may both fetch it. Pass ``client``
    to share a connection pool (it is not closed by :meth:`close`); ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        user_agent: str,
        *,
        ttl_s: float = 86400,
        error_ttl_s: float = 300,
        fetch_timeout_s: float = 10,
        max_domains: int = 100_000,
        client: httpx.Client | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_domains < 1:
            raise ValueError(f"max_domains must be >= 1, got {max_domains}")
        self.user_agent = user_agent
        self.ttl_s = ttl_s
        self.error_ttl_s = error_ttl_s
        self.fetch_timeout_s = fetch_timeout_s
        self.max_domains = max_domains
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client()
        self._clock = clock
        self._policies: OrderedDict[str, _Policy] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RobotsCache(user_agent={self.user_agent!r}, ttl_s={self.ttl_s}, origins={len(self)})"

    def __len__(self) -> int:
        return len(self._policies)

    def check(self, url: str) -> RobotsVerdict:
        """The verdict for ``url`` (http or https), fetching its origin's robots.txt when not cached.

        Never raises for a bad robots.txt or an unreachable server (that is a verdict); raises
        :class:`~core.web.exceptions.InvalidUrl` when ``url`` itself is not an http(s) URL.
        """
        domain = domain_of(url)  # validates first: urlsplit() below then cannot fail
        origin = f"{urlsplit(url.strip()).scheme.lower()}://{domain}"
        return self._policy(origin).verdict(url, self.user_agent)

    def close(self) -> None:
        """Close the HTTP client if this cache created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> RobotsCache:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _policy(self, origin: str) -> _Policy:
        with self._lock:
            policy = self._policies.get(origin)
            if policy is not None and policy.expires_at > self._clock():
                self._policies.move_to_end(origin)
                return policy
        # Fetch outside the lock: one slow origin must not hold up checks for every other origin.
        policy = self._fetch(origin)
        with self._lock:
            self._policies[origin] = policy
            self._policies.move_to_end(origin)
            while len(self._policies) > self.max_domains:
                self._policies.popitem(last=False)
        return policy

    def _fetch(self, origin: str) -> _Policy:
        try:
            status, body, redirects = self._download(f"{origin}/robots.txt")
        except (httpx.HTTPError, TimeoutError) as error:
            return self._unreachable(f"{type(error).__name__}: {error}")
        now = self._clock()
        if 200 <= status < 300:
            rules = Protego.parse(body.decode("utf-8-sig", errors="replace"))
            return _Policy(rules, True, "robots.txt", now + self.ttl_s)
        if status == 429 or status >= 500:
            return self._unreachable(f"HTTP {status}")
        after = f" after {redirects} redirects" if redirects else ""
        reason = f"robots.txt unavailable (HTTP {status}{after}): everything allowed"
        return _Policy(None, True, reason, now + self.ttl_s)

    def _unreachable(self, why: str) -> _Policy:
        reason = f"robots.txt unreachable: {why}; everything disallowed for now"
        return _Policy(None, False, reason, self._clock() + self.error_ttl_s)

    def _download(self, url: str) -> tuple[int, bytes, int]:
        """Status, the first MAX_ROBOTS_BYTES of the body, and the number of redirects followed."""
        deadline = time.monotonic() + self.fetch_timeout_s
        request = self._client.build_request(
            "GET", url, headers={"User-Agent": self.user_agent}, timeout=self.fetch_timeout_s
        )
        for redirects in range(MAX_REDIRECTS + 1):
            response = self._client.send(request, stream=True, follow_redirects=False)
            try:
                if response.next_request is None or redirects == MAX_REDIRECTS:
                    # Only a 2xx body is ever parsed; other bodies are not worth the bytes.
                    body = _read_capped(response, deadline) if response.is_success else b""
                    return response.status_code, body, redirects
                request = response.next_request
            finally:
                response.close()
        raise AssertionError("unreachable: the loop returns on its last round")


def _read_capped(response: httpx.Response, deadline: float) -> bytes:
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) >= MAX_ROBOTS_BYTES:
            break
        # httpx times each read; the deadline also stops a server that trickles bytes forever.
        if time.monotonic() > deadline:
            raise TimeoutError(f"robots.txt download took over its deadline ({len(body)} bytes read)")
    return bytes(body[:MAX_ROBOTS_BYTES])
