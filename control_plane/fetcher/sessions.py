"""Sessions of a profile: a consent form and a login posted once per domain, their cookies kept.

A profile may name two form posts (:class:`FormStep`), made on the domain being fetched before its
first page: ``consent`` (a cookie banner's "accept", a region picker) and ``login``. The cookies
their answers set go into a jar per profile and domain (:class:`SessionJars`), and from there as a
``Cookie`` header onto every later request of the domain, renders included. A page that answers
401/403, or that is sent to the login or consent page, drops the jar: the next fetch posts again.

Where the jars live, and why: in the fetcher's memory, written to a file of its own machine
(``DUALPLANE_STACK_DATA_DIR/fetcher/sessions.json``, mode 0600) after each login, so a restarted
fetcher goes on with its sessions. Not in Kafka, like profiles: session cookies are credentials,
and nothing a fleet shares (topics, records, status) should hold them. Each fetcher machine signs
in once per profile and domain.

A login field's value ``env:NAME`` is read from the fetcher's environment when it posts: the
password then never leaves the fetcher's machine (not even the profiles topic holds it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dualplane.control_plane.fetcher.backends.base import FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.exceptions import FetcherError, FetchFailed
from dualplane.control_plane.fetcher.retry_policy import Outcome

log = logging.getLogger(__name__)

FIELD_NAME = re.compile(r"^[A-Za-z0-9_.\[\]-]{1,64}$")
STEP_PATH = re.compile(r"^/(?!/)[^\s#]{0,500}$")
# Set-Cookie headers arrive joined with ", " (body.decoded_headers); an Expires date has a comma too,
# but no "name=" right after it.
COOKIE_SPLIT = re.compile(r",\s*(?=[^;,=\s]+=)")
MAX_JARS = 10_000


class SessionFailed(FetchFailed):
    """A consent or login post was refused: the profile's fields are wrong, or the site changed."""

    outcome = Outcome.FORBIDDEN


@dataclass(frozen=True)
class FormStep:
    """A form post on the fetched domain: ``path`` (``/login``) with ``fields``; ``secret``: its
    values are never shown (a login's)."""

    path: str
    fields: Mapping[str, str] = field(default_factory=dict)
    secret: bool = False

    def __post_init__(self) -> None:
        if not STEP_PATH.match(self.path):
            raise FetcherError(f"a form step's path starts with one '/', e.g. /login; got {self.path!r}")
        for name, value in self.fields.items():
            if not FIELD_NAME.match(name) or "\n" in value or "\r" in value:
                raise FetcherError(
                    f"form field {name!r}: a name of letters, digits, '_.-[]' and a one-line value"
                )

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "fields": dict(self.fields), "secret": self.secret}

    def public(self) -> dict[str, Any]:
        shown = {name: "***" if self.secret else value for name, value in self.fields.items()}
        return {"path": self.path, "fields": shown}

    def form(self) -> dict[str, str]:
        """The fields to post, ``env:NAME`` values read from this process's environment."""
        posted = {}
        for name, value in self.fields.items():
            variable = value.removeprefix("env:") if value.startswith("env:") else None
            if variable is not None and variable not in os.environ:
                raise SessionFailed(
                    f"form field {name} names {variable}, which this fetcher's environment lacks"
                )
            posted[name] = os.environ[variable] if variable is not None else value
        return posted


Post = Callable[[FetchRequest], Awaitable[FetchResponse]]


class SessionJars:
    """Cookie jars by (profile, its steps, domain); each filled by the steps once, then reused."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._jars: dict[str, dict[str, str]] = self._load()
        self._locks: dict[str, asyncio.Lock] = {}

    async def cookie_header(
        self, key: str, steps: tuple[FormStep, ...], request: FetchRequest, post: Post
    ) -> str:
        """The ``Cookie`` header for ``request``'s domain, posting ``steps`` first if the jar is empty."""
        jar = self._jars.get(key)
        if jar is None:
            async with self._locks.setdefault(key, asyncio.Lock()):
                jar = self._jars.get(key)  # another fetch of the domain may have signed in meanwhile
                if jar is None:
                    jar = await self._sign_in(steps, request, post)
                    self._keep(key, jar)
        return _header(jar)

    def drop(self, key: str) -> None:
        """The site no longer takes the jar's cookies: the next fetch posts the steps again."""
        if self._jars.pop(key, None) is not None:
            self._save()

    async def _sign_in(
        self, steps: tuple[FormStep, ...], request: FetchRequest, post: Post
    ) -> dict[str, str]:
        jar: dict[str, str] = {}
        origin = "/".join(request.url.split("/", 3)[:3])
        for step in steps:
            headers = {**request.headers, **({"Cookie": _header(jar)} if jar else {})}
            answer = await post(
                replace(
                    request,
                    url=origin + step.path,
                    form=step.form(),
                    headers=headers,
                    max_redirects=0,
                    conditional_headers={},
                )
            )
            if not 200 <= answer.status < 400:
                raise SessionFailed(
                    f"the form post to {origin}{step.path} answered {answer.status}: check the profile's "
                    f"{'--login-field' if step.secret else '--consent-field'} values",
                    final_url=origin + step.path,
                )
            jar.update(_cookies(answer.headers.get("set-cookie", "")))
        log.info("session: signed in at %s (%d cookies)", origin, len(jar))  # names and values stay out
        return jar

    def _keep(self, key: str, jar: dict[str, str]) -> None:
        if len(self._jars) >= MAX_JARS:
            self._jars.clear()
        self._jars[key] = jar
        self._save()

    def _load(self) -> dict[str, dict[str, str]]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            return {str(key): dict(jar) for key, jar in json.loads(self.path.read_text()).items()}
        except (OSError, ValueError, TypeError, AttributeError) as error:
            log.warning(
                "session jars at %s unreadable (%s): signing in again", self.path, type(error).__name__
            )
            return {}

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(".tmp")
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as file:
                json.dump(self._jars, file)
            temporary.replace(self.path)
        except OSError as error:  # the sessions go on in memory; a restart signs in again
            log.warning("session jars not written to %s (%s)", self.path, error.strerror)


def _cookies(set_cookie: str) -> dict[str, str]:
    cookies = {}
    for line in COOKIE_SPLIT.split(set_cookie) if set_cookie else ():
        name, equals, value = line.split(";", 1)[0].strip().partition("=")
        if equals and name:
            cookies[name] = value
    return cookies


def _header(jar: Mapping[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in jar.items())
