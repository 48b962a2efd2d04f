"""How much of one site a crawl takes: the scope half of a fetch profile, shared by fetcher and frontier.

A profile (``dualplane profile set``) carries a :class:`SiteScope` for the domains it matches; the
fetcher stores and shows it, the frontier enforces it (``control_plane/frontier/site_rules.py``).
Both read the same JSON, so the rules and their checks live here, below both.

- ``page_budget``: pages admitted per domain per job (a monitor's visit is a job): the faceted shop
  of a 500-shop monitor stops at its budget and the other 499 are crawled whole.
- ``allow`` / ``deny``: regexes searched in the canonical URL; deny wins, and with ``allow`` a URL
  must match one of them.
- trap limits: ``max_query_params`` (faceted navigation: ``?color=red&size=m&sort=price&...``),
  ``max_repeated_segments`` (the same path segment again and again: ``/a/b/a/b/a/``, relative-link
  loops), ``max_url_length``, and ``max_depth`` (link depth from the seeds, for this domain's URLs:
  endless calendars).

:func:`most_specific` is the one rule for which profile a domain gets, for both readers, and
:class:`PatternBook` remembers each domain's answer for both.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Generic, TypeVar
from urllib.parse import SplitResult, urlsplit

T = TypeVar("T")
MAX_REMEMBERED = 100_000  # domains whose match a book remembers; then it starts again
LIMITS = ("page_budget", "max_query_params", "max_repeated_segments", "max_url_length", "max_depth")


@dataclass(frozen=True)
class SiteScope:
    """The crawl limits of the domains of one profile (see the module docstring); all optional."""

    page_budget: int | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    max_query_params: int | None = None
    max_repeated_segments: int | None = None
    max_url_length: int | None = None
    max_depth: int | None = None
    _allow: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _deny: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in LIMITS:
            value = getattr(self, name)
            least = 0 if name in ("max_query_params", "max_depth") else 1
            if value is not None and (not isinstance(value, int) or value < least):
                raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
        # Frozen: the compiled patterns are set once, here.
        object.__setattr__(self, "_allow", _compiled(self.allow, "allow"))
        object.__setattr__(self, "_deny", _compiled(self.deny, "deny"))

    @property
    def empty(self) -> bool:
        return self == SiteScope()

    def rejection(self, url: str, depth: int) -> str | None:
        """Why ``url`` (canonical) at link depth ``depth`` is out of this scope; None: in scope.

        The budget is not checked here: it needs the count of pages taken (the frontier's).
        """
        if self.max_url_length is not None and len(url) > self.max_url_length:
            return f"URL longer than {self.max_url_length} characters"
        if self.max_depth is not None and depth > self.max_depth:
            return f"depth {depth} beyond the profile's max_depth {self.max_depth}"
        return self._trap(urlsplit(url)) or self._pattern_rejection(url)

    def _trap(self, parts: SplitResult) -> str | None:
        if self.max_query_params is not None and parts.query:
            count = len([pair for pair in parts.query.split("&") if pair])
            if count > self.max_query_params:
                return f"{count} query parameters, more than {self.max_query_params}"
        if self.max_repeated_segments is not None:
            segments = Counter(segment for segment in parts.path.split("/") if segment)
            if segments and max(segments.values()) > self.max_repeated_segments:
                return f"a path segment repeated more than {self.max_repeated_segments} times"
        return None

    def _pattern_rejection(self, url: str) -> str | None:
        for pattern in self._deny:
            if pattern.search(url):
                return f"matches the profile's deny pattern {pattern.pattern!r}"
        if self._allow and not any(pattern.search(url) for pattern in self._allow):
            return "matches none of the profile's allow patterns"
        return None

    def to_dict(self) -> dict[str, Any]:
        """The set rules only (a profile without scope stores ``{}``)."""
        data = {name: value for name, value in asdict(self).items() if not name.startswith("_")}
        return {
            name: list(value) if isinstance(value, tuple) else value for name, value in data.items() if value
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SiteScope:
        """Raises ``ValueError`` (or ``TypeError``) naming what is wrong."""
        return cls(**{**data, "allow": tuple(data.get("allow", ())), "deny": tuple(data.get("deny", ()))})


def budget_of(*budgets: int | None) -> int | None:
    """The tightest of the budgets that are set (a job's and its domain's profile's), None: no budget."""
    given = [budget for budget in budgets if budget is not None]
    return min(given) if given else None


def most_specific(candidates: Iterable[tuple[str, tuple[str, ...], T]], domain: str) -> T | None:
    """The item of ``(name, domain patterns, item)`` whose most specific pattern matches ``domain``.

    Patterns are ``fnmatch`` patterns on the politeness key (``host`` or ``host:port``). No wildcard
    beats wildcards, then the longer pattern wins, then the name first in order: the choice never
    depends on the order the candidates come in.
    """
    best: tuple[tuple[bool, int, str], T] | None = None
    domain = domain.lower()
    for name, patterns, item in candidates:
        for pattern in patterns:
            if not fnmatchcase(domain, pattern):
                continue
            rank = (not _wild(pattern), len(pattern), _reverse(name))
            if best is None or rank > best[0]:
                best = (rank, item)
    return best[1] if best else None


class PatternBook(Generic[T]):
    """Items by name, each with its domain patterns, and each domain's :func:`most_specific` item
    remembered until an item changes.

    A fetch (and each URL a frontier admits) asks for its domain's profile; trying every pattern of
    100 profiles cost 0.3 ms a fetch (``benchmarks/rendering_cost.py``), half again a direct fetch's
    CPU, and domains repeat. Not thread-safe: its owners guard it.
    """

    def __init__(self) -> None:
        self.items: dict[str, tuple[tuple[str, ...], T]] = {}
        self._matches: dict[str, T | None] = {}

    def put(self, name: str, patterns: tuple[str, ...], item: T) -> None:
        self.items[name] = (patterns, item)
        self._matches.clear()

    def remove(self, name: str) -> None:
        if self.items.pop(name, None) is not None:
            self._matches.clear()

    def named(self, name: str) -> T | None:
        entry = self.items.get(name)
        return None if entry is None else entry[1]

    def match(self, domain: str) -> T | None:
        try:
            return self._matches[domain]
        except KeyError:
            pass
        if len(self._matches) >= MAX_REMEMBERED:
            self._matches.clear()
        candidates = ((name, patterns, item) for name, (patterns, item) in self.items.items())
        found = self._matches[domain] = most_specific(candidates, domain)
        return found


def _compiled(patterns: tuple[str, ...], kind: str) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as error:
            raise ValueError(f"{kind} pattern {pattern!r} is not a regular expression: {error}") from error
    return tuple(compiled)


def _wild(pattern: str) -> bool:
    return any(char in pattern for char in "*?[")


def _reverse(name: str) -> str:
    # Among equals the name first in order wins: max() over the complement of each character.
    return "".join(chr(0x10FFFF - ord(char)) for char in name)
