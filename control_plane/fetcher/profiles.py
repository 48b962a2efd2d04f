"""Fetch profiles: how the domains matching a profile's patterns are fetched.

A :class:`Profile` names domain patterns (``fnmatch`` on the politeness key, ``host`` or
``host:port``: ``shop.example``, ``*.shop.example``, ``127.0.0.1:8001``) and says, for those domains,
which backend fetches them (``direct``, ``browser``, ``auto``: render only where it shows more, or
``api``: the managed scraping API, from
``country`` if given), through which ``proxies`` (rotated, banned ones quarantined), how a render
waits (a load state, a CSS selector, a time limit), the user agent and extra headers to send, and
how much of those domains a crawl takes (``scope``: budget, patterns, trap limits; the frontier
enforces it).
:func:`match` picks the profile of a domain: the most specific pattern wins (no wildcard before
wildcards, then the longest), then the profile's name, so the choice never depends on the order
profiles arrived in.
Profiles are stored and shared by :mod:`.profile_store`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.exceptions import FetcherError
from dualplane.control_plane.fetcher.sessions import FormStep
from dualplane.core.settings import checks, mask_url_password
from dualplane.core.web.site_scope import PatternBook, SiteScope, most_specific

Backend = Literal["direct", "browser", "api", "auto"]
Wait = Literal["load", "networkidle"]
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
PATTERN = re.compile(r"^[a-z0-9*?.\-\[\]:_]{1,253}$")
# Our own request headers: a profile changes the user agent with user_agent, and never the rest.
OWN_HEADERS = frozenset({"user-agent", "accept", "accept-encoding", "host", "content-length", "connection"})
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")
COUNTRY = re.compile(r"^[A-Z]{2}$")


class ProfileError(FetcherError):
    """A profile that cannot be used; the message says which field and what is allowed."""


@dataclass(frozen=True)
class Profile:
    """How the domains matching ``domains`` are fetched (see the module docstring)."""

    name: str
    domains: tuple[str, ...]
    backend: Backend = "direct"
    wait: Wait = "load"
    wait_selector: str | None = None
    wait_s: float = 10.0
    user_agent: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    country: str | None = None
    proxies: tuple[str, ...] = ()
    # How much of these domains a crawl takes: enforced by the frontier, not here (see SiteScope).
    scope: SiteScope = field(default_factory=SiteScope)
    # Form posts made once per domain before its pages, their cookies kept (see sessions.py).
    consent: FormStep | None = None
    login: FormStep | None = None

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ProfileError(f"profile name {self.name!r}: use 1-64 of a-z, 0-9, '.', '_', '-'")
        if not self.domains:
            raise ProfileError(f"profile {self.name}: give at least one domain pattern (--domain)")
        for pattern in self.domains:
            if not PATTERN.match(pattern):
                raise ProfileError(
                    f"profile {self.name}: domain pattern {pattern!r} is not a lower-case host[:port] "
                    "pattern (e.g. shop.example, *.shop.example, 127.0.0.1:8001)"
                )
        if self.backend not in ("direct", "browser", "api", "auto") or self.wait not in (
            "load",
            "networkidle",
        ):
            raise ProfileError(
                f"profile {self.name}: backend must be direct, browser, auto or api and wait load or "
                f"networkidle, got {self.backend!r} and {self.wait!r}"
            )
        if self.country is not None and (self.backend != "api" or not COUNTRY.match(self.country)):
            raise ProfileError(
                f"profile {self.name}: a country is two capital letters (e.g. DE) and only for "
                f"backend api (the managed API's exit country), got {self.country!r} with {self.backend}"
            )
        if not 0 < self.wait_s <= 120:
            raise ProfileError(f"profile {self.name}: wait_s must be in (0, 120] seconds, got {self.wait_s}")
        self._check_user_agent_and_proxies()
        for name, value in self.headers.items():
            if not HEADER_NAME.match(name) or name.lower() in OWN_HEADERS or "\n" in value or "\r" in value:
                raise ProfileError(
                    f"profile {self.name}: header {name!r} cannot be set (a name of letters, digits and "
                    f"'-', not one of {sorted(OWN_HEADERS)}, its value on one line; --user-agent sets that)"
                )

    def _check_user_agent_and_proxies(self) -> None:
        if self.user_agent is not None:
            try:  # one rule with DUALPLANE_FETCH_USER_AGENT's: not blank, on one line
                checks.header_value(self.user_agent)
            except ValueError as error:
                raise ProfileError(f"profile {self.name}: the user agent {error}") from None
        try:
            checks.proxies(",".join(self.proxies))
        except ValueError as error:
            text = str(error)
            for proxy in self.proxies:  # the password stays out of the message (and any log)
                text = text.replace(proxy, mask_url_password(proxy))
            raise ProfileError(f"profile {self.name}: proxies: {text}") from None
        if self.proxies and self.backend == "api":
            raise ProfileError(f"profile {self.name}: the scraping API brings its own proxies; use --country")

    @property
    def steps(self) -> tuple[FormStep, ...]:
        """The form posts a session of this profile starts with: consent, then login."""
        return tuple(step for step in (self.consent, self.login) if step is not None)

    def apply(self, request: FetchRequest) -> FetchRequest:
        """``request`` with this profile's user agent and headers."""
        if self.user_agent is None and not self.headers:
            return request
        return replace(
            request,
            user_agent=self.user_agent or request.user_agent,
            headers={**request.headers, **self.headers},
        )

    def to_json(self) -> bytes:
        data = {
            **self.__dict__,
            "domains": list(self.domains),
            "headers": dict(self.headers),
            "proxies": list(self.proxies),
            "scope": self.scope.to_dict(),
            "consent": self.consent.to_dict() if self.consent else None,
            "login": self.login.to_dict() if self.login else None,
        }
        return json.dumps(data, sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Profile:
        try:
            data = cast("dict[str, Any]", json.loads(raw))
            sequences = {"domains": tuple(data["domains"]), "proxies": tuple(data.get("proxies", ()))}
            scope = SiteScope.from_dict(data.get("scope", {}))
            steps = {name: _step(data.get(name)) for name in ("consent", "login")}
            return cls(
                **{**data, **sequences, **steps, "headers": dict(data.get("headers", {})), "scope": scope}
            )
        except (ValueError, TypeError, KeyError, FetcherError) as error:
            raise ProfileError(f"unreadable profile ({error})") from error

    def public(self) -> dict[str, Any]:
        """What ``profile show``/``list`` print: header values and proxy passwords are left out, as
        they may be secrets."""
        data = json.loads(self.to_json())
        data["headers"] = sorted(self.headers)
        data["proxies"] = [mask_url_password(proxy) for proxy in self.proxies]
        for name, step in (("consent", self.consent), ("login", self.login)):
            data[name] = step.public() if step else None
        return cast("dict[str, Any]", data)


class ProfileBook:
    """Profiles by name, with each domain's match remembered until the profiles change
    (:class:`~core.web.site_scope.PatternBook`). Not thread-safe: :class:`~.profile_store.ProfileView`
    guards it."""

    def __init__(self, profiles: Iterable[Profile] = ()) -> None:
        self._book: PatternBook[Profile] = PatternBook()
        for profile in profiles:
            self.put(profile)

    @property
    def profiles(self) -> dict[str, Profile]:
        return {name: profile for name, (_, profile) in self._book.items.items()}

    def put(self, profile: Profile) -> None:
        self._book.put(profile.name, profile.domains, profile)

    def remove(self, name: str) -> None:
        self._book.remove(name)

    def named(self, name: str) -> Profile | None:
        return self._book.named(name)

    def match(self, domain: str) -> Profile | None:
        return self._book.match(domain)


def _step(data: dict[str, Any] | None) -> FormStep | None:
    if data is None:
        return None
    return FormStep(data["path"], dict(data.get("fields", {})), bool(data.get("secret", False)))


def match(profiles: Iterable[Profile], domain: str) -> Profile | None:
    """The profile whose most specific pattern matches ``domain`` (see the module docstring)."""
    return most_specific(((profile.name, profile.domains, profile) for profile in profiles), domain)
