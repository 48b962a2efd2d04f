"""``dualplane throttle show | set | clear``: what the throttle decided per domain, and overrides."""

from __future__ import annotations

import getpass
import re
import socket
import time
from datetime import datetime
from typing import Annotated, Any

import typer

from dualplane.cli import values
from dualplane.cli.deprecated import renamed_value
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stderr, stdout, table
from dualplane.core.clock import utc_now
from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import Settings
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.throttle import (
    ALL_DOMAINS,
    OPERATOR,
    ThrottleCommand,
    ThrottleError,
    clearing_override,
    issue_override,
    latest_overrides,
    read_snapshot,
)

app = typer.Typer(help="Adaptive throttling: what the block-ratio processor decided per domain, and why.")

STALE_AFTER_S = 10
# A politeness key as the frontier makes it (core.web.urls.domain_of): a host, maybe ":port".
DOMAIN = re.compile(r"^[a-z0-9.\-\[\]:_]+$")

DomainArgument = Annotated[
    str, typer.Argument(help="The domain as `throttle show` lists it, e.g. shop.example.")
]


@app.command("show")
def show(as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """Per domain, read from the brokers (the compacted throttle.state topic, from any machine):
    P_d, delay, pause, the rate the processor set and the site's limit as it knows it, its last
    decision and why; then the operator overrides in force. Where this machine has the processor's
    snapshot, --json adds it (its windows, hot or not)."""
    settings = settings_in(namespace)
    processor, active = latest_overrides(settings)
    path = settings.throttle_snapshot_path
    snapshot = read_snapshot(path) if path is not None and path.exists() else None
    if not processor and not active and snapshot is None:
        raise DualplaneError(
            f"no throttle state in {settings.topics.throttle_state!r} and no operator override in "
            "force: no domain was throttled yet, or no processor runs (`dualplane run throttle`); "
            "a crawl in a namespace needs --namespace"
        )
    if as_json:
        print_json(
            {
                "namespace": namespace,
                "domains": [_state_entry(c) for c in processor],
                "overrides": [_override_entry(c) for c in active],
                "snapshot": snapshot,
            }
        )
        return
    if processor:
        stdout.print(_state_table(processor))
    elif snapshot is not None:
        stdout.print(_snapshot_table(snapshot))
    else:
        stderr.print("[yellow]the processor has throttled no domain yet[/yellow]")
    if active:
        stdout.print(_overrides_table(active))


@app.command("set")
def set_(
    domain: DomainArgument,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="P_d: concurrent requests to the domain, fleet-wide.")
    ],
    delay: Annotated[
        float | None,
        typer.Option("--delay", parser=values.duration, help="Pause between two requests, e.g. 250ms or 2s."),
    ] = None,
    ttl: Annotated[
        float | None,
        typer.Option(
            "--ttl", parser=values.duration, help="Expire after this long, e.g. 10m (default: never)."
        ),
    ] = None,
    pause: Annotated[
        bool, typer.Option("--pause", help="Send nothing to the domain while in force.")
    ] = False,
    reason: Annotated[str, typer.Option(help="Why; shown by `throttle show`.")] = "",
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
    delay_ms: Annotated[
        int | None, typer.Option("--delay-ms", min=0, hidden=True, help="Old name of --delay, in ms.")
    ] = None,
    ttl_s: Annotated[
        int | None, typer.Option("--ttl-s", min=1, hidden=True, help="Old name of --ttl.")
    ] = None,
) -> None:
    """Override the processor's limits for DOMAIN, fleet-wide, at once, until it expires or is cleared."""
    delay_s = renamed_value(delay or 0.0, delay_ms, "--delay-ms", "--delay 250ms", old_unit_s=0.001)
    if delay is None and delay_ms is None:
        raise typer.BadParameter(
            "give the pause between two requests, e.g. --delay 250ms", param_hint="--delay"
        )
    expire_s = renamed_value(ttl or 0.0, ttl_s, "--ttl-s", "--ttl 10m") if ttl or ttl_s else None
    if expire_s is not None and expire_s < 1:
        raise typer.BadParameter("expire after at least 1s", param_hint="--ttl")
    settings = settings_in(namespace)
    command = ThrottleCommand(
        domain=_domain(domain),
        concurrency=concurrency,
        delay_ms=round(delay_s * 1000),
        paused=pause,
        ttl_s=None if expire_s is None else round(expire_s),
        source=OPERATOR,
        reason=reason or f"operator: set by {_who()}",
    )
    _issue(settings, command, as_json)
    floor_ms = settings.limits.domain_delay_ms
    if command.delay_ms < floor_ms and not as_json:
        stderr.print(
            f"note: fetchers never wait less than DUALPLANE_LIMIT_DOMAIN_DELAY_MS={floor_ms} ms between "
            "requests to a domain, nor less than its robots.txt Crawl-delay"
        )


@app.command("clear")
def clear(domain: DomainArgument, as_json: JsonOption = False, namespace: NamespaceOption = None) -> None:
    """End DOMAIN's operator override now: the processor's limits (or the defaults) apply again.
    DOMAIN '*' ends the fleet-wide pause a scraping API's used-up quota started."""
    settings = settings_in(namespace)
    command = clearing_override(settings, clear_target(domain), f"operator: cleared by {_who()}")
    _issue(settings, command, as_json)


def _issue(settings: Settings, command: ThrottleCommand, as_json: bool) -> None:
    try:
        issue_override(settings, command)
    except ThrottleError as error:
        raise DualplaneError(str(error)) from error
    entry = {
        **_override_entry(command),
        "state_key": command.state_key,
        "topic": settings.topics.throttle_state,
        "exchange": settings.queues.throttle_exchange,
    }
    if as_json:
        print_json(entry)
        return
    if command.ttl_s == 0:
        stdout.print(f"cleared the operator override of {command.domain}")
        return
    until = f"until {entry['expires_at']}" if command.ttl_s is not None else "until cleared"
    paused = ", [bold]paused[/bold]" if command.paused else ""
    stdout.print(
        f"{command.domain}: concurrency {command.concurrency}, delay {command.delay_ms} ms{paused}, {until} "
        f"(in {entry['topic']} as {command.state_key}, announced on {entry['exchange']})"
    )


def clear_target(text: str) -> str:
    """What ``clear`` ends: a domain's override, or with ``*`` the pause of every domain (the quota's)."""
    return ALL_DOMAINS if text.strip() == ALL_DOMAINS else _domain(text)


def _domain(text: str) -> str:
    """The politeness key a task of this domain carries; a URL gets a hint, not a guess."""
    domain = text.strip().lower()
    if "://" in domain:
        try:
            hint = f"; did you mean {domain_of(text.strip())!r}?"
        except InvalidUrl:
            hint = ""
        raise DualplaneError(f"DOMAIN must be a host such as shop.example, not a URL ({text!r}){hint}")
    if not domain or not DOMAIN.match(domain):
        raise DualplaneError(
            f"{text!r} is not a domain: give the host as `dualplane throttle show` lists it, "
            "e.g. shop.example or 127.0.0.1:8101 (with the port when it is not 80/443)"
        )
    return domain


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def _override_entry(command: ThrottleCommand) -> dict[str, Any]:
    expires_at = command.expires_at
    return {
        **command.model_dump(mode="json", include={"domain", "concurrency", "delay_ms", "paused", "reason"}),
        "source": command.source,
        "issued_at": command.issued_at.isoformat(),
        "ttl_s": command.ttl_s,
        "expires_at": expires_at.isoformat() if expires_at else None,
    }


def _state_entry(command: ThrottleCommand) -> dict[str, Any]:
    """The processor's latest command for a domain, as `throttle show --json` lists it."""
    decision, _, why = command.reason.partition(": ")
    return {
        **command.model_dump(
            mode="json",
            include={"domain", "concurrency", "delay_ms", "paused", "rate_rps", "limit_rps"},
        ),
        "decision": decision,
        "why": why,
        "reason": command.reason,
        "issued_at": command.issued_at.isoformat(),
        "blocked_ratio": command.blocked_ratio,
        "window_total": command.window_total,
        "window_blocked": command.window_blocked,
    }


def _state_table(processor: list[ThrottleCommand]) -> Any:
    now = utc_now()
    rows = []
    for command in processor:
        entry = _state_entry(command)
        rate = "unthrottled" if command.rate_rps is None else f"{command.rate_rps:.2f}/s"
        limit = "" if command.limit_rps is None else f"{command.limit_rps:.2f}/s"
        age = f"{(now - command.issued_at).total_seconds():.0f} s ago"
        limits = [str(command.concurrency), f"{command.delay_ms} ms", str(command.paused)]
        rows.append([command.domain, *limits, rate, limit, entry["decision"], age, entry["why"]])
    columns = ["domain", "P_d", "delay", "paused", "rate", "limit", "decision", "when", "why"]
    return table("throttle (the processor's latest decisions, from the brokers)", columns, rows)


def _overrides_table(active: list[ThrottleCommand]) -> Any:
    now = utc_now()
    rows = []
    for command in active:
        expires_at = command.expires_at
        left = f"in {(expires_at - now).total_seconds():.0f} s" if expires_at else "never"
        limits = [str(command.concurrency), f"{command.delay_ms} ms", str(command.paused)]
        rows.append([command.domain, *limits, left, command.reason])
    columns = ["domain", "P_d", "delay", "paused", "expires", "reason"]
    return table("operator overrides (win over the processor)", columns, rows)


def _snapshot_table(snapshot: dict[str, Any]) -> Any:
    generated = snapshot.get("generated_at")
    age_s = time.time() - datetime.fromisoformat(generated).timestamp() if generated else 0.0
    rows = []
    for domain, state in sorted(snapshot.get("domains", {}).items()):
        window = state.get("window") or {}
        last = (state.get("last_command") or {}).get("reason", "")
        counts = f"{window.get('blocked', 0)}/{window.get('total', 0)}"
        ratio = f"{window.get('blocked_ratio', 0):.1%}"
        limits = [str(state.get("concurrency")), f"{state.get('delay_ms')} ms", str(state.get("paused"))]
        rows.append([domain, *limits, counts, ratio, last])
    title = "throttle" + (
        f" (snapshot {age_s:.0f} s old: is the processor running?)" if age_s > STALE_AFTER_S else ""
    )
    return table(title, ["domain", "P_d", "delay", "paused", "blocked", "ratio", "last command"], rows)
