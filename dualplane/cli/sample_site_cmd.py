"""``dualplane sample-site``: serve the deterministic sample website (on loopback by default) until Ctrl-C."""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Annotated, Any

import typer

from dualplane.cli import values
from dualplane.cli.deprecated import renamed_value
from dualplane.cli.output import JsonOption, print_json, progress, stdout, table
from dualplane.sample_site import AntiBot, AntiBotMode, Changes, SampleSite, SiteSpec
from dualplane.sample_site.layout import site_name
from dualplane.sample_site.server import policy_json
from dualplane.sample_site.spec import LOOPBACK


def sample_site(
    *,
    hosts: Annotated[
        int, typer.Option("--hosts", min=1, help="Hosts, one port each: shop, news, mixed, …")
    ] = 3,
    pages: Annotated[int, typer.Option("--pages", min=1, help="Products and articles per host.")] = 100,
    random_seed: Annotated[
        int, typer.Option("--random-seed", help="Same random seed and sizes, same pages, byte for byte.")
    ] = 7,
    base_port: Annotated[
        int, typer.Option("--base-port", min=0, max=65535, help="First port; 0 picks a free range.")
    ] = 0,
    latency: Annotated[
        float,
        typer.Option("--latency", parser=values.duration, help="Delay of every page response, e.g. 20ms."),
    ] = 0.02,
    anti_bot_rps: Annotated[
        float | None,
        typer.Option("--anti-bot-rps", help="Block clients above this many requests/s per host."),
    ] = None,
    anti_bot_mode: Annotated[
        AntiBotMode,
        typer.Option("--anti-bot-mode", help="How to block: 429 + Retry-After, a captcha page, or both."),
    ] = "429",
    bind: Annotated[
        str, typer.Option("--bind", help="Address to listen on (0.0.0.0 to serve other machines).")
    ] = LOOPBACK,
    public_host: Annotated[
        str | None,
        typer.Option("--public-host", help="Name in the site's URLs (default: the --bind address)."),
    ] = None,
    change_every: Annotated[
        float | None,
        typer.Option(
            "--change-every",
            parser=values.duration,
            help="Change a share of the products' prices and stock this often (at least 1s), e.g. 30s; "
            "pages then carry ETag and Last-Modified and answer 304 while unchanged.",
        ),
    ] = None,
    change_share: Annotated[
        float, typer.Option("--change-share", min=0.001, max=1, help="Share of products changed each time.")
    ] = 0.1,
    js_hosts: Annotated[
        list[int] | None,
        typer.Option(
            "--js-host",
            min=0,
            help="A shop host (by index) whose product pages draw price and stock with a script "
            "(repeatable): only a rendering fetcher sees them.",
        ),
    ] = None,
    faceted_hosts: Annotated[
        list[int] | None,
        typer.Option(
            "--faceted-host",
            min=0,
            help="A shop host (by index) with filter links and endless trap pages beside its real ones "
            "(repeatable): crawl it with a profile's --page-budget or trap limits.",
        ),
    ] = None,
    consent_hosts: Annotated[
        list[int] | None,
        typer.Option(
            "--consent-host", min=0, help="A host whose pages need its consent form's cookie (repeatable)."
        ),
    ] = None,
    login_hosts: Annotated[
        list[int] | None,
        typer.Option("--login-host", min=0, help="A host whose product pages need a login (repeatable)."),
    ] = None,
    as_json: JsonOption = False,
    seed: Annotated[
        int | None, typer.Option("--seed", hidden=True, help="Old name of --random-seed.")
    ] = None,
    latency_ms: Annotated[
        int | None, typer.Option("--latency-ms", min=0, hidden=True, help="Old name of --latency, in ms.")
    ] = None,
    change_every_s: Annotated[
        float | None, typer.Option("--change-every-s", min=1, hidden=True, help="Old name of --change-every.")
    ] = None,
) -> None:
    """Serve a deterministic multi-host website on 127.0.0.1 for demos, tests and benchmarks.

    Runs until Ctrl-C. Every host also serves /_stats, /_log, /_truth and /_control/anti_bot.
    In a container: --bind 0.0.0.0 --public-host NAME, where NAME is how crawlers reach it.
    """
    if anti_bot_rps is not None and anti_bot_rps <= 0:
        raise typer.BadParameter(
            "must be > 0 (leave it out to disable the anti-bot)", param_hint="--anti-bot-rps"
        )
    anti_bot = AntiBot(anti_bot_rps, anti_bot_mode) if anti_bot_rps is not None else None
    if public_host is None and bind in ("0.0.0.0", "::"):
        raise typer.BadParameter(
            "a site listening on every address needs the name crawlers reach it by",
            param_hint="--public-host",
        )
    random_seed = round(renamed_value(random_seed, seed, "--seed", "--random-seed"))
    latency_s = renamed_value(latency, latency_ms, "--latency-ms", "--latency 20ms", old_unit_s=0.001)
    every_s = change_every
    if change_every_s is not None:
        every_s = renamed_value(change_every or 0.0, change_every_s, "--change-every-s", "--change-every 30s")
    if every_s is not None and every_s < 1:
        raise typer.BadParameter("change at most every 1s", param_hint="--change-every")
    changes = Changes(every_s, change_share) if every_s is not None else None
    chosen_hosts = (
        (js_hosts, "--js-host"),
        (faceted_hosts, "--faceted-host"),
        (consent_hosts, "--consent-host"),
        (login_hosts, "--login-host"),
    )
    for chosen, option in chosen_hosts:
        if any(host >= hosts for host in chosen or ()):
            raise typer.BadParameter(f"hosts are 0..{hosts - 1}", param_hint=option)
    spec = SiteSpec(
        random_seed,
        hosts,
        pages,
        base_port,
        round(latency_s * 1000),
        anti_bot,
        public_host or bind,
        changes,
        tuple(js_hosts or ()),
        tuple(faceted_hosts or ()),
        tuple(consent_hosts or ()),
        tuple(login_hosts or ()),
    )
    site = SampleSite(spec, bind=bind)
    progress("site", f"starting {hosts} hosts, {pages} pages each, random seed {random_seed}")
    signal.signal(signal.SIGTERM, lambda _signum, _frame: site.stop())
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how the user stops it
        site.run(on_ready=lambda running: _announce(running, as_json))
    progress("site", f"stopped; {site.stats().total_requests} requests served")


def _announce(site: SampleSite, as_json: bool) -> None:
    if as_json:
        print_json(describe(site))
        sys.stdout.flush()  # a reader waits for this line while the site keeps running
    else:
        rows = [
            [str(host["index"]), host["kind"], host["name"], host["url"], host["anti_bot"]]
            for host in _hosts(site)
        ]
        stdout.print(table("sample site", ["host", "kind", "name", "url", "anti-bot"], rows))
        progress("site", f"seeds: {' '.join(site.seeds)}")
    progress("site", f"serving; traffic at {site.urls[0]}/_stats; Ctrl-C to stop")


def describe(site: SampleSite) -> dict[str, Any]:
    """What ``--json`` prints once the site is ready."""
    spec = site.spec
    return {
        "urls": site.urls,
        "seeds": site.seeds,
        "seed": spec.seed,
        "pages_per_host": spec.pages_per_host,
        "latency_ms": spec.latency_ms,
        "hosts": [{**host, "anti_bot": policy_json(site.anti_bot(host["index"]))} for host in _hosts(site)],
        "endpoints": {name: f"{site.urls[0]}/_{name}" for name in ("stats", "log", "truth", "changes")},
        "changes": _changes_json(spec.changes),
    }


def _changes_json(changes: Changes | None) -> dict[str, float] | None:
    if changes is None:
        return None
    return {"period_s": changes.period_s, "share": changes.share, "epoch_s": changes.epoch_s}


def _hosts(site: SampleSite) -> list[dict[str, Any]]:
    hosts = []
    for index, url in enumerate(site.urls):
        policy = site.anti_bot(index)
        shown = f"{policy.max_rps:g} rps -> {policy.mode}" if policy else "off"
        hosts.append(
            {
                "index": index,
                "kind": site.spec.kind(index),
                "name": site_name(site.spec, index),
                "url": url,
                "anti_bot": shown,
                "scripted_prices": index in site.spec.js_hosts,
                "traps": index in site.spec.faceted_hosts,
                "consent": index in site.spec.consent_hosts,
                "login": index in site.spec.login_hosts,
            }
        )
    return hosts
