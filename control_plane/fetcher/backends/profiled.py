"""The fetcher's backend when profiles apply: each fetch goes the way its domain's profile says.

A domain without a profile is fetched by the fleet's backend (``DUALPLANE_FETCH_BACKEND``). A
profile's user agent and headers go on its request; ``backend: browser`` renders it in the
fetcher's one browser pool, with the profile's wait, ``backend: api`` sends it through the managed
scraping API (one client per country, ``proxy_country``), and ``backend: direct`` fetches it
directly; a profile's ``proxies`` get a direct client of their own (a render's requests go
through it too).
The pool is made at the first render, so a fetcher whose domains need none never starts a browser
(nor loads Playwright). A profile with a consent or login step fetches in a session: its cookies
(``sessions.py``) go on the request, and a page that shows it signed out signs in again once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from dualplane.control_plane.fetcher.backends.base import FetchBackend, FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.exceptions import ConnectionFailed
from dualplane.control_plane.fetcher.profiles import Profile
from dualplane.control_plane.fetcher.sessions import SessionJars
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of

if TYPE_CHECKING:
    from dualplane.control_plane.fetcher.backends.browser import BrowserBackend
    from dualplane.control_plane.fetcher.backends.browser_pool import BrowserPool


class Profiles(Protocol):
    """What the backend asks of the profiles (a :class:`~.profile_store.ProfileView`)."""

    def match(self, domain: str) -> Profile | None: ...

    def close(self) -> None: ...


class ProfiledBackend(FetchBackend):
    """Routes each fetch by its domain's profile; ``fleet`` fetches the domains without one."""

    def __init__(
        self,
        fleet: FetchBackend,
        direct: DirectBackend,
        profiles: Profiles,
        new_pool: Callable[[], BrowserPool],
        *,
        new_api: Callable[[Profile], FetchBackend] | None = None,
        new_direct: Callable[[tuple[str, ...]], DirectBackend] | None = None,
        sessions: SessionJars | None = None,
    ) -> None:
        self.fleet = fleet
        self.direct = direct
        self.profiles = profiles
        self._new_pool = new_pool
        self._pool: BrowserPool | None = None
        self._renderers: dict[bytes, BrowserBackend] = {}  # by the profile's JSON: a changed profile is new
        self._new_api = new_api
        self._apis: dict[str | None, FetchBackend] = {}  # by country
        self._new_direct = new_direct
        self._proxied: dict[tuple[str, ...], DirectBackend] = {}  # by proxy list
        self.sessions = sessions or SessionJars()

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        """See :meth:`FetchBackend.fetch`."""
        profile = self._profile(request.url)
        if profile is None:
            return await self.fleet.fetch(request)
        request = profile.apply(request)
        if profile.steps:
            return await self._in_session(profile, request)
        return await self._routed(profile, request)

    async def _routed(self, profile: Profile, request: FetchRequest) -> FetchResponse:
        if profile.backend == "browser":
            return await self._renderer(profile).fetch(request)
        if profile.backend == "api":
            return await self._api(profile).fetch(request)
        return await self._direct(profile).fetch(request)

    async def aclose(self) -> None:
        self.profiles.close()
        if self._pool is not None:
            await self._pool.aclose()
        for other in [*self._apis.values(), *self._proxied.values()]:
            await other.aclose()
        await self.fleet.aclose()
        if self.direct is not self.fleet:
            await self.direct.aclose()

    async def _in_session(self, profile: Profile, request: FetchRequest) -> FetchResponse:
        steps = "".join(repr(step.to_dict()) for step in profile.steps).encode()
        key = f"{profile.name} {hashlib.sha256(steps).hexdigest()[:16]} {domain_of(request.url)}"
        post = self._direct(profile).fetch
        cookie = await self.sessions.cookie_header(key, profile.steps, request, post)
        response = await self._routed(profile, _with_cookie(request, cookie))
        if _signed_out(response, profile):  # the session ended (expired, or the site forgot it)
            self.sessions.drop(key)
            cookie = await self.sessions.cookie_header(key, profile.steps, request, post)
            response = await self._routed(profile, _with_cookie(request, cookie))
        return response

    def _profile(self, url: str) -> Profile | None:
        try:
            return self.profiles.match(domain_of(url))
        except InvalidUrl:
            return None  # the fleet's backend says what is wrong with the URL

    def _direct(self, profile: Profile) -> DirectBackend:
        """The direct client of the profile: the fleet's, or one through the profile's proxies."""
        if not profile.proxies or self._new_direct is None:
            return self.direct
        direct = self._proxied.get(profile.proxies)
        if direct is None:
            direct = self._proxied[profile.proxies] = self._new_direct(profile.proxies)
        return direct

    def _api(self, profile: Profile) -> FetchBackend:
        """The managed API's backend for the profile's country, made at its first fetch."""
        api = self._apis.get(profile.country)
        if api is None:
            if self._new_api is None:
                raise ConnectionFailed(
                    f"profile {profile.name} fetches through the scraping API, but this fetcher has no "
                    "DUALPLANE_FETCH_SCRAPING_API_KEY: set it, or change the profile's backend"
                )
            api = self._apis[profile.country] = self._new_api(profile)
        return api

    def _renderer(self, profile: Profile) -> BrowserBackend:
        from dualplane.control_plane.fetcher.backends.browser import (  # noqa: PLC0415
            BrowserBackend,  # here: only fetchers that render load Playwright
            RenderOptions,
        )

        key = profile.to_json()
        renderer = self._renderers.get(key)
        if renderer is None:
            if self._pool is None:
                self._pool = self._new_pool()
            options = RenderOptions(wait=profile.wait, selector=profile.wait_selector, wait_s=profile.wait_s)
            if len(self._renderers) > 1000:  # profiles replaced many times: drop the old ones
                self._renderers.clear()
            renderer = self._renderers[key] = BrowserBackend(self._direct(profile), self._pool, options)
        return renderer


def _with_cookie(request: FetchRequest, cookie: str) -> FetchRequest:
    if not cookie:
        return request
    headers = {name: value for name, value in request.headers.items() if name.lower() != "cookie"}
    return replace(request, headers={**headers, "Cookie": cookie})


def _signed_out(response: FetchResponse, profile: Profile) -> bool:
    """Whether the answer says the session is not (any more) taken: refused, or sent to a step's page."""
    if response.status in (401, 403):
        return True
    landed = urlsplit(response.final_url).path
    return bool(response.redirect_chain) and any(landed == step.path.split("?")[0] for step in profile.steps)
