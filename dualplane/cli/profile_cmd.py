"""``dualplane profile set | show | list | delete``: how the fleet fetches the domains a profile matches.

Profiles are stored in the compacted ``fetch.profiles`` topic; running fetchers follow it and apply
a change to the next fetch of its domains (``control_plane/fetcher/profile_store.py``). Header values
are never printed: they may hold cookies or tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from dualplane.cli.monitor_cmd import parse_duration_s
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stdout, table
from dualplane.control_plane.fetcher import (
    FetcherError,
    FormStep,
    Profile,
    ProfileError,
    delete_profile,
    put_profile,
    read_profiles,
)
from dualplane.core.exceptions import DualplaneError
from dualplane.core.web.site_scope import SiteScope

app = typer.Typer(
    help="Fetch profiles: per domain pattern, the backend (direct or our own browser), render waits, headers."
)

T = TypeVar("T")
NameArgument = Annotated[str, typer.Argument(help="The profile's name, e.g. js-shops.")]


@app.command("set")
def set_(
    name: NameArgument,
    domains: Annotated[
        list[str],
        typer.Option(
            "--domain", help="A domain pattern: shop.example, *.shop.example, 127.0.0.1:8001 (repeatable)."
        ),
    ],
    backend: Annotated[
        str,
        typer.Option(
            help="direct: fetch as is; browser: render in headless Chromium; auto: render only the domains "
            "whose pages show more rendered (price data, script-built text); api: the managed scraping API."
        ),
    ] = "direct",
    wait: Annotated[
        str, typer.Option(help="With --backend browser: wait for load or networkidle before keeping the DOM.")
    ] = "load",
    wait_selector: Annotated[
        str | None, typer.Option(help="With --backend browser: also wait for this CSS selector.")
    ] = None,
    wait_timeout: Annotated[
        str,
        typer.Option("--wait-timeout", help="The most each wait may take (e.g. 10s); then the DOM as it is."),
    ] = "10s",
    user_agent: Annotated[str | None, typer.Option(help="The User-Agent for these domains.")] = None,
    headers: Annotated[
        list[str] | None,
        typer.Option("--header", help="An extra request header, 'Name: value' (repeatable)."),
    ] = None,
    proxies: Annotated[
        list[str] | None,
        typer.Option(
            "--proxy", help="A proxy URL for these domains, http://user:pass@host:port (repeatable)."
        ),
    ] = None,
    country: Annotated[
        str | None, typer.Option(help="With --backend api: the country the API fetches from (e.g. DE).")
    ] = None,
    page_budget: Annotated[
        int | None, typer.Option(min=1, help="Pages admitted per domain per job or monitor visit at most.")
    ] = None,
    allow: Annotated[
        list[str] | None, typer.Option(help="Regex; only matching URLs of these domains are followed.")
    ] = None,
    deny: Annotated[
        list[str] | None, typer.Option(help="Regex; matching URLs of these domains are skipped.")
    ] = None,
    max_query_params: Annotated[
        int | None, typer.Option(min=0, help="Trap limit: URLs with more query parameters are skipped.")
    ] = None,
    max_repeated_segments: Annotated[
        int | None,
        typer.Option(min=1, help="Trap limit: a path segment seen more often than this is skipped."),
    ] = None,
    max_url_length: Annotated[
        int | None, typer.Option(min=1, help="Trap limit: longer URLs are skipped.")
    ] = None,
    max_depth: Annotated[
        int | None,
        typer.Option(min=0, help="Trap limit: these domains' URLs deeper than this (links from a seed)."),
    ] = None,
    consent: Annotated[
        str | None, typer.Option(help="A consent form to post once per domain first, by path: /consent.")
    ] = None,
    consent_fields: Annotated[
        list[str] | None, typer.Option("--consent-field", help="A field of the consent post, name=value.")
    ] = None,
    login: Annotated[
        str | None, typer.Option(help="A login form to post once per domain, by path: /login.")
    ] = None,
    login_fields: Annotated[
        list[str] | None,
        typer.Option(
            "--login-field",
            help="A field of the login post, name=value; value env:NAME reads the fetcher's environment "
            "(values are never printed).",
        ),
    ] = None,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Create or replace profile NAME; running fetchers apply it to their next fetch of its domains,
    frontiers its scope (--page-budget, --allow, --deny, trap limits) to the next URLs they admit."""
    try:
        scope = SiteScope(
            page_budget=page_budget,
            allow=tuple(allow or ()),
            deny=tuple(deny or ()),
            max_query_params=max_query_params,
            max_repeated_segments=max_repeated_segments,
            max_url_length=max_url_length,
            max_depth=max_depth,
        )
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    try:
        profile = Profile(
            name=name,
            domains=tuple(domain.strip().lower() for domain in domains),
            backend=backend,  # type: ignore[arg-type]  # checked by Profile
            wait=wait,  # type: ignore[arg-type]
            wait_selector=wait_selector or None,
            wait_s=parse_duration_s(wait_timeout, "--wait-timeout"),
            user_agent=user_agent,
            headers=_headers(headers or []),
            country=country.upper() if country else None,
            proxies=tuple(proxies or ()),
            scope=scope,
            consent=_step(consent, consent_fields, "--consent"),
            login=_step(login, login_fields, "--login", secret=True),
        )
    except FetcherError as error:
        raise typer.BadParameter(str(error)) from None
    settings = settings_in(namespace)
    _stored(lambda: put_profile(settings.kafka, settings.topics.profiles, profile))
    if as_json:
        print_json({"profile": profile.public(), "topic": settings.topics.profiles})
        return
    # Escaped: a selector such as body[data-priced] is no rich markup.
    stdout.print(escape(f"profile {name}: {_summary(profile)} (in {settings.topics.profiles})"))


@app.command("show")
def show(name: NameArgument, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Print profile NAME (header names only)."""
    settings = settings_in(namespace)
    found = _stored(lambda: read_profiles(settings.kafka, settings.topics.profiles))
    profile = found.get(name)
    if profile is None:
        known = ", ".join(sorted(found)) or "none yet"
        raise DualplaneError(
            f"no profile {name!r} (profiles: {known}); create it with `dualplane profile set`"
        )
    if as_json:
        print_json(profile.public())
        return
    stdout.print(_table([profile]))


@app.command("list")
def list_(as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Every profile, by name."""
    settings = settings_in(namespace)
    found = _stored(lambda: read_profiles(settings.kafka, settings.topics.profiles))
    profiles = [found[name] for name in sorted(found)]
    if as_json:
        print_json({"profiles": [profile.public() for profile in profiles]})
        return
    if not profiles:
        stdout.print("no profiles: every domain is fetched by DUALPLANE_FETCH_BACKEND")
        return
    stdout.print(_table(profiles))


@app.command("delete")
def delete(name: NameArgument, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Remove profile NAME: its domains go back to the fleet's backend."""
    settings = settings_in(namespace)
    _stored(lambda: delete_profile(settings.kafka, settings.topics.profiles, name))
    if as_json:
        print_json({"deleted": name, "topic": settings.topics.profiles})
        return
    stdout.print(f"profile {name} deleted")


def _stored(call: Callable[[], T]) -> T:
    try:
        return call()
    except ProfileError as error:  # Kafka unreachable, or a stored profile unreadable
        raise DualplaneError(str(error)) from error


def _step(path: str | None, lines: list[str] | None, option: str, *, secret: bool = False) -> FormStep | None:
    if path is None:
        if lines:
            raise typer.BadParameter(
                f"fields need the form's path: give {option} PATH", param_hint=f"{option}-field"
            )
        return None
    fields = {}
    for line in lines or ():
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            raise typer.BadParameter(
                "a field is name=value (its value is not shown)", param_hint=f"{option}-field"
            )
        fields[name.strip()] = value
    return FormStep(path, fields, secret)


def _headers(lines: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise typer.BadParameter(f"{line!r} is not 'Name: value'", param_hint="--header")
        headers[name.strip()] = value.strip()
    return headers


def _summary(profile: Profile) -> str:
    how: str = profile.backend
    if profile.backend in ("browser", "auto"):
        waits = profile.wait + (f" and {profile.wait_selector}" if profile.wait_selector else "")
        how += f" (waits for {waits}, at most {profile.wait_s:g} s)"
    if profile.country:
        how += f" from {profile.country}"
    if profile.proxies:
        how += f" through {len(profile.proxies)} prox{'y' if len(profile.proxies) == 1 else 'ies'}"
    for name, step in (("consent", profile.consent), ("login", profile.login)):
        if step is not None:
            how += f", {name} at {step.path}"
    limits = ", ".join(f"{name} {value}" for name, value in profile.scope.to_dict().items())
    return f"{', '.join(profile.domains)} fetched by {how}" + (f"; {limits}" if limits else "")


def _steps(profile: Profile) -> list[tuple[str, str]]:
    """The form posts of the profile's sessions, by path (their fields are never shown here)."""
    return [
        (name, step.path) for name, step in (("consent", profile.consent), ("login", profile.login)) if step
    ]


def _table(profiles: list[Profile]) -> Any:
    rows = [
        [
            escape(cell)
            for cell in (
                profile.name,
                " ".join(profile.domains),
                profile.backend,
                profile.wait
                + (f" + {profile.wait_selector}" if profile.wait_selector else "")
                + f" ≤{profile.wait_s:g}s",
                profile.user_agent or "",
                " ".join(sorted(profile.headers)),
                " ".join(f"{name}={value}" for name, value in profile.scope.to_dict().items()),
                " ".join(f"{step} {path}" for step, path in _steps(profile)),
            )
        ]
        for profile in profiles
    ]
    return table(
        "fetch profiles",
        ["name", "domains", "backend", "render wait", "user agent", "headers", "scope", "session"],
        rows,
    )
