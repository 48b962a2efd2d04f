"""Crawl scope: which discovered URLs a job follows (depth, domains, allow and deny patterns)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of


@dataclass(frozen=True)
class ScopeDecision:
    """Whether a URL is in scope, and a readable reason either way (logged and counted)."""

    allowed: bool
    reason: str


@dataclass(frozen=True)
class ScopeRules:
    """The scope of one crawl job; all rules must pass for a URL to be followed.

    - ``allowed_domains``: empty admits any domain. ``"example.com"`` admits that host and its
      subdomains (``shop.example.com``) on any port; ``"127.0.0.1:8101"`` admits that port only.
    - ``deny_patterns`` / ``allow_patterns``: regexes *searched* in the canonical URL. Deny wins;
      when ``allow_patterns`` is non-empty a URL must match at least one of them.
    - ``max_depth``: links followed from a seed (seeds are depth 0); ``None`` is unlimited.

    Patterns are compiled once here; an invalid one raises ``ValueError`` naming it.
    """

    allowed_domains: frozenset[str] = frozenset()
    allow_patterns: tuple[str, ...] = ()
    deny_patterns: tuple[str, ...] = ()
    max_depth: int | None = None
    _allow: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _deny: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _domains: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Frozen dataclass: derived fields are set once, here, and never change afterwards.
        object.__setattr__(self, "_allow", _compile(self.allow_patterns, "allow"))
        object.__setattr__(self, "_deny", _compile(self.deny_patterns, "deny"))
        object.__setattr__(self, "_domains", frozenset(_domain_rule(d) for d in self.allowed_domains))
        if self.max_depth is not None and self.max_depth < 0:
            raise ValueError(f"max_depth must be >= 0 or None, got {self.max_depth}")

    def check(self, url: str, depth: int) -> ScopeDecision:
        """Decide whether ``url`` (a canonical URL, see :func:`canonicalize`) at ``depth`` is in scope.

        Rules run cheapest first: depth, domain, deny patterns, allow patterns. An invalid URL is
        out of scope with the reason, rather than an exception, so one bad link never stops a job.
        """
        rejection = self._rejection(url, depth)
        if rejection is not None:
            return ScopeDecision(False, rejection)
        if not self._allow:
            return ScopeDecision(True, "in scope")
        for pattern in self._allow:
            if pattern.search(url):
                return ScopeDecision(True, f"matches allow pattern {pattern.pattern!r}")
        return ScopeDecision(False, "matches no allow pattern")

    def _rejection(self, url: str, depth: int) -> str | None:
        if self.max_depth is not None and depth > self.max_depth:
            return f"depth {depth} exceeds max_depth {self.max_depth}"
        try:
            domain = domain_of(url)
        except InvalidUrl as error:
            return f"invalid URL: {error}"
        if self._domains and not self._domain_allowed(domain):
            return f"domain {domain} not in allowed domains"
        for pattern in self._deny:
            if pattern.search(url):
                return f"matches deny pattern {pattern.pattern!r}"
        return None

    def _domain_allowed(self, domain: str) -> bool:
        host, port = _host_and_port(domain)
        # Walk up the labels: shop.example.com -> example.com -> com, each with and without port.
        while host:
            if host in self._domains or (port and f"{host}:{port}" in self._domains):
                return True
            host = host.partition(".")[2]
        return False


def _compile(patterns: tuple[str, ...], kind: str) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as error:
            raise ValueError(f"invalid {kind} pattern {pattern!r}: {error}") from error
    return tuple(compiled)


def _host_and_port(domain: str) -> tuple[str, str]:
    if domain.startswith("["):  # IPv6: "[::1]:8080"
        host, _, port = domain.partition("]")
        return host + "]", port.removeprefix(":")
    host, _, port = domain.partition(":")
    return host, port


def _domain_rule(rule: str) -> str:
    # Accept the spellings people type: "Example.com", ".example.com", "example.com." all mean one rule.
    return rule.strip().lower().strip(".")
