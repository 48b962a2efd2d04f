"""Reading a site's sitemaps: robots.txt ``Sitemap:`` lines, indexes, gzip, each through the guarded client.

Every request goes through :class:`~core.web.client.GuardedClient` (on a :class:`ClientThread`),
as robots.txt does: the SSRF guard on every redirect hop, one deadline for the whole answer, a size
cap. Bodies are spooled to a temporary file (memory up to ``SPOOL_BYTES``, then disk) and parsed
streaming by :class:`~core.web.sitemaps.SitemapParser`, so a 50,000-URL sitemap costs flat memory.

What is wrong with a sitemap is a :class:`SitemapProblem` handed to ``on_problem`` (the caller
dead-letters it), never an exception: too large, not XML, an HTTP error, a loop of indexes, indexes
nested too deep, URLs out of the sitemap's scope. Per the protocol a sitemap lists URLs of its own
host only, unless a robots.txt pointed at it: then of the robots.txt's host.

:meth:`SitemapReader.entries` blocks on each fetch (each bounded by ``fetch_timeout_s``): call it
from the CLI or a worker thread, never from a frontier shard's loop.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import IO

from protego import Protego

from dualplane.control_plane.frontier.robots import MAX_REDIRECTS, MAX_ROBOTS_BYTES, RobotsCache
from dualplane.core.web.client_thread import ClientThread
from dualplane.core.web.exceptions import InvalidUrl, OutboundFailed, SitemapInvalid, UnsafeUrl
from dualplane.core.web.sitemaps import MAX_SITEMAP_BYTES, SitemapEntry, SitemapParser
from dualplane.core.web.urls import domain_of

SPOOL_BYTES = 1024 * 1024
MAX_INDEX_DEPTH = 2
"""Index levels followed: robots -> index -> urlset is depth 1; the protocol forbids indexes of indexes,
but some sites nest one level, so one nested index is read and a second is a problem."""
MAX_SITEMAPS = 1000
"""Sitemap files read from one starting sitemap (an index may list 50,000; monitors re-read them)."""
OUT_OF_SCOPE_EXAMPLES = 3


@dataclass(frozen=True)
class SitemapProblem:
    """Why (part of) a sitemap was not used, readable as it stands: the dead letter's reason."""

    sitemap_url: str
    reason: str
    entries_used: int = 0  # entries taken from it before (or despite) the problem


@dataclass
class SitemapStats:
    """What one :meth:`SitemapReader.entries` walk read, for the user's summary."""

    sitemaps_read: int = 0
    pages: int = 0
    out_of_scope: int = 0
    bad_locs: int = 0
    problems: int = 0


class SitemapReader:
    """Walks sitemaps (and the indexes above them) and yields their pages' :class:`SitemapEntry`.

    ``on_problem`` gets every :class:`SitemapProblem`; the walk then goes on with the next sitemap.
    """

    def __init__(
        self,
        client: ClientThread,
        *,
        on_problem: Callable[[SitemapProblem], None],
        fetch_timeout_s: float = 60,
        max_bytes: int = MAX_SITEMAP_BYTES,
        max_depth: int = MAX_INDEX_DEPTH,
        max_sitemaps: int = MAX_SITEMAPS,
    ) -> None:
        self.client = client
        self.on_problem = on_problem
        self.fetch_timeout_s = fetch_timeout_s
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_sitemaps = max_sitemaps
        self.stats = SitemapStats()

    def __repr__(self) -> str:
        return f"SitemapReader(max_bytes={self.max_bytes}, max_depth={self.max_depth})"

    def robots_sitemaps(self, site_url: str) -> list[str]:
        """The ``Sitemap:`` URLs in the robots.txt of ``site_url``'s origin; [] if none or unreachable."""
        robots_url = f"{RobotsCache.origin_of(site_url)}/robots.txt"
        fetch = self.client.get(
            robots_url,
            deadline_s=self.fetch_timeout_s,
            max_bytes=MAX_ROBOTS_BYTES,
            max_redirects=MAX_REDIRECTS,
        )
        try:
            answer = fetch.result()
        except (OutboundFailed, UnsafeUrl, CancelledError) as error:
            self._problem(robots_url, f"robots.txt unreachable, no Sitemap: lines read ({error})")
            return []
        if not 200 <= answer.status < 300:
            return []
        rules = Protego.parse(answer.body.decode("utf-8-sig", errors="replace"))
        return [url.strip() for url in rules.sitemaps]

    def entries(self, sitemap_url: str, *, robots_site: str | None = None) -> Iterator[SitemapEntry]:
        """The pages ``sitemap_url`` lists, through its indexes, each within the sitemap's scope.

        ``robots_site`` is the URL of a site whose robots.txt named this sitemap: its host is then
        the scope (the protocol's cross-host submission); else the sitemap's own host is.
        """
        try:
            scope = domain_of(robots_site or sitemap_url)
        except InvalidUrl as error:
            self._problem(sitemap_url, f"not a sitemap URL: {error}")
            return
        yield from self._walk(sitemap_url, scope, (), set())

    def _walk(self, url: str, scope: str, path: tuple[str, ...], seen: set[str]) -> Iterator[SitemapEntry]:
        if url in path:
            self._problem(url, f"a loop of sitemap indexes: {' -> '.join((*path, url))}")
            return
        if len(path) > self.max_depth:
            chain = " -> ".join((*path, url))
            self._problem(url, f"sitemap indexes nested deeper than {self.max_depth} levels: {chain}")
            return
        if url in seen:
            return  # listed twice (by two indexes): read once
        if len(seen) >= self.max_sitemaps:
            self._problem(url, f"more than {self.max_sitemaps} sitemap files from one start; not read")
            return
        seen.add(url)
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as body:
            if not self._fetch(url, body):
                return
            body.seek(0)
            yield from self._parse(url, body, scope, path, seen)

    def _fetch(self, url: str, into: IO[bytes]) -> bool:
        fetch = self.client.get(
            url,
            deadline_s=self.fetch_timeout_s,
            max_bytes=self.max_bytes,
            max_redirects=MAX_REDIRECTS,
            into=into,
        )
        try:
            answer = fetch.result()
        except (OutboundFailed, UnsafeUrl, CancelledError) as error:
            self._problem(url, f"sitemap unreachable: {type(error).__name__}: {error}")
            return False
        if not 200 <= answer.status < 300:
            after = f" after {answer.redirects} redirect(s)" if answer.redirects else ""
            self._problem(url, f"sitemap unavailable: HTTP {answer.status}{after}")
            return False
        if answer.truncated:
            self._problem(
                url, f"sitemap larger than {self.max_bytes:,} bytes (the protocol's limit is 50 MiB)"
            )
            return False
        self.stats.sitemaps_read += 1
        return True

    def _parse(
        self, url: str, body: IO[bytes], scope: str, path: tuple[str, ...], seen: set[str]
    ) -> Iterator[SitemapEntry]:
        parser = SitemapParser(body, url=url, max_bytes=self.max_bytes)
        used, outside, examples = 0, 0, list[str]()  # a count and a few examples: 50,000 strangers stay flat
        try:
            for entry in parser.entries():
                if entry.domain != scope:
                    outside += 1
                    if len(examples) < OUT_OF_SCOPE_EXAMPLES:
                        examples.append(entry.url)
                elif parser.kind == "sitemapindex":
                    yield from self._walk(entry.url, scope, (*path, url), seen)
                else:
                    used += 1
                    self.stats.pages += 1
                    yield entry
        except SitemapInvalid as error:
            self._problem(url, str(error), used)
        self.stats.bad_locs += parser.bad_locs
        if outside:
            self._out_of_scope(url, scope, outside, examples, used)

    def _out_of_scope(self, url: str, scope: str, outside: int, examples: list[str], used: int) -> None:
        self.stats.out_of_scope += outside
        reason = (
            f"{outside:,} URL(s) out of the sitemap's scope (host {scope}; a sitemap may list only "
            f"its own host's URLs unless that host's robots.txt names it), skipped; "
            f"e.g. {', '.join(examples)}"
        )
        self._problem(url, reason, used)

    def _problem(self, url: str, reason: str, used: int = 0) -> None:
        """Every reason names its sitemap first: ``dlq list`` shows the reason, not the body."""
        self.stats.problems += 1
        named = reason if reason.startswith(f"{url}: ") else f"{url}: {reason}"
        self.on_problem(SitemapProblem(url, named, used))
