"""``dualplane crawl``: submit a crawl job, and with ``--wait`` follow it to the end."""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dualplane.cli import values
from dualplane.cli.deprecated import renamed_value
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stderr, stdout, table
from dualplane.cli.seeding import seeding_progress

if TYPE_CHECKING:  # imported when the command runs, so that `crawl --help` starts fast
    from dualplane.brokers.amqp.messages import JobSpec, Priority
    from dualplane.control_plane.frontier import Verdict
    from dualplane.core.settings import Settings

EXTRACTOR_GROUP = "dualplane.extractors"  # data_plane.extract.plugins.ENTRY_POINT_GROUP, without its imports
# `crawl --wait`: the job finished, but some fetched page has no record (dead-lettered at fetch or
# extraction). 1 stays "did not finish" (cancelled, stalled, timed out), 2 a usage error.
EXIT_INCOMPLETE = 3


def crawl(
    seed: Annotated[
        list[str] | None,
        typer.Option("--seed", parser=values.non_empty, help="A start URL; repeat for more."),
    ] = None,
    seeds_file: Annotated[
        str | None,
        typer.Option(help="Start URLs, one per line: a local file or s3://bucket/key, gzip or not."),
    ] = None,
    sitemap: Annotated[
        list[str] | None,
        typer.Option(
            "--sitemap", help="A sitemap (or index, gzip or not) whose pages are seeds; repeat for more."
        ),
    ] = None,
    sitemaps_from_robots: Annotated[
        bool,
        typer.Option(help="Also seed from the sitemaps the --seed hosts' robots.txt name (Sitemap: lines)."),
    ] = False,
    job: Annotated[str | None, typer.Option("--job", help="Job id (default: a new one).")] = None,
    priority: Annotated[str, typer.Option(help="Lane: high, normal or bulk.")] = "normal",
    max_pages: Annotated[
        int | None, typer.Option(min=1, help="Stop admitting after this many pages.")
    ] = None,
    max_depth: Annotated[int | None, typer.Option(min=0, help="Links followed from a seed at most.")] = None,
    allow_domain: Annotated[
        list[str] | None,
        typer.Option(parser=values.non_empty, help="Domains in scope (default: the seeds' domains)."),
    ] = None,
    any_domain: Annotated[bool, typer.Option(help="Follow links to any domain.")] = False,
    deny: Annotated[list[str] | None, typer.Option(help="Regex; matching URLs are skipped.")] = None,
    allow: Annotated[
        list[str] | None, typer.Option(help="Regex; only matching URLs are followed (repeatable: any one).")
    ] = None,
    domain_budget: Annotated[
        int | None,
        typer.Option(
            min=1, help="Pages admitted per domain at most (a profile's --page-budget may be lower)."
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="The fetch profile for every page of the job, whatever its domain (`profile set`)."
        ),
    ] = None,
    ignore_robots: Annotated[bool, typer.Option(help="Do not obey robots.txt.")] = False,
    extractor: Annotated[
        str | None,
        typer.Option(
            parser=values.non_empty, help="Extractor plugin for the job's pages (entry point name)."
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option(help="Follow the job until its pages are fetched and its records committed.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", parser=values.duration, help="With --wait: give up after this long.")
    ] = 3600,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
    timeout_s: Annotated[
        float | None,
        typer.Option("--timeout-s", parser=values.seconds, hidden=True, help="Old name of --timeout."),
    ] = None,
) -> None:
    """Submit a crawl job: its rules, then its seeds, each confirmed by RabbitMQ."""
    timeout = renamed_value(timeout, timeout_s, "--timeout-s", "--timeout 1h")
    from dualplane.brokers.amqp.messages import check_job_id
    from dualplane.cli.following import follow
    from dualplane.cli.sitemap_seeding import submit_sitemaps
    from dualplane.connectors.seeds import open_seed_list
    from dualplane.control_plane.frontier import JobClient

    settings = settings_in(namespace)
    seeds = _read_seeds(seed or [], seeds_file, bool(sitemap))
    if priority not in ("high", "normal", "bulk"):
        raise typer.BadParameter(
            f"{priority!r} is not a lane; use high, normal or bulk", param_hint="--priority"
        )
    if sitemaps_from_robots and not seed:
        raise typer.BadParameter(
            "it reads the robots.txt of the --seed URLs' hosts: give --seed",
            param_hint="--sitemaps-from-robots",
        )
    _checked_extractor(extractor)
    if job is not None:
        try:
            check_job_id(job)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--job") from None
    seed_list = open_seed_list(seeds_file, settings) if seeds_file else None
    jobs = JobClient(settings)
    with seeding_progress(seed_list) as bar:
        # The job's scope: as given, else the domains of the seeds, of a seed list (a first pass over
        # it) and of the --sitemap URLs (a sitemap lists its own host's pages), see JobClient.spec.
        spec, count = jobs.crawl(
            itertools.chain(seeds, seed_list or ()),
            job_id=job,
            scope_urls=itertools.chain(seeds, seed_list or (), sitemap or ()),
            allowed_domains=() if any_domain else tuple(allow_domain) if allow_domain else None,
            source=f"the seeds{f' and seed list {seeds_file}' if seeds_file else ''}",
            on_scope_url=bar.reading_domains,
            on_seed=bar.seeding,
            deny_patterns=_patterns(deny, "--deny"),
            allow_patterns=_patterns(allow, "--allow"),
            domain_budget=domain_budget,
            profile=_existing_profile(settings, profile),
            max_depth=max_depth,
            max_pages=max_pages,
            priority=_lane(priority),
            obey_robots=not ignore_robots,
            extractor=extractor,
        )
    if sitemap or sitemaps_from_robots:
        count += submit_sitemaps(jobs, spec, sitemap or [], seeds if sitemaps_from_robots else [])
    if count == 0:
        _no_seeds(jobs, spec.job_id, as_json)
    stderr.print(f"submitted job [bold]{spec.job_id}[/bold] with {count} seed(s)")
    progress, verdict = follow(settings, spec.job_id, timeout, seeds=count) if wait else (None, None)
    _report(spec, count, seed_list.bad if seed_list else 0, progress, verdict, as_json)
    if verdict is not None:
        _conclude(spec.job_id, verdict, timeout)


def _conclude(job_id: str, verdict: Verdict, timeout_s: float) -> None:
    """``crawl --wait``'s last line and exit code: 0 only when every fetched page has its record."""
    if not verdict.finished:  # never exit 0 while pages or records are missing
        ended = "was cancelled" if verdict.cancelled else "stalled" if verdict.stalled else "did not finish"
        within = "" if verdict.cancelled or verdict.stalled else f" within {timeout_s:g} s"
        goes_on = "" if verdict.cancelled else "; it goes on"
        stderr.print(f"error: job {job_id} {ended}{within} ({verdict.why}){goes_on}", soft_wrap=True)
        raise typer.Exit(1)
    if not verdict.complete:
        stderr.print(
            f"error: job {job_id} finished with pages missing their records: {verdict.why}; "
            "see `dualplane dlq list` for each dead letter",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_INCOMPLETE)
    stderr.print(f"job {job_id} finished: {verdict.why}", soft_wrap=True)


def _no_seeds(jobs: Any, job_id: str, as_json: bool, monitor: str | None = None) -> None:
    """Every seed source failed (all sitemaps unreadable, a seed list of bad lines only): say so now
    and end the job (a monitor's first visit), rather than leave it "running" with nothing to crawl
    until it stalls. Exits 1."""
    jobs.cancel(job_id, force=True)  # the frontier may not have published it yet
    why = "no seed: every seed source failed (the problems are above, and in `dualplane dlq list`)"
    if as_json:
        print_json({"job_id": job_id, "monitor_id": monitor, "seeds": 0, "finished": False, "why": why})
    if monitor is None:
        stderr.print(f"error: job {job_id} has {why}; it was ended, with nothing crawled", soft_wrap=True)
    else:
        stderr.print(
            f"error: monitor {monitor}'s first visit {job_id} has {why}; the visit was ended, with nothing "
            f"crawled. The monitor reads its sitemaps again at its next visit (`dualplane monitor visit "
            f"{monitor}`), or drop it with `dualplane monitor delete {monitor}`",
            soft_wrap=True,
        )
    raise typer.Exit(1)


def _existing_profile(settings: Settings, name: str | None) -> str | None:
    """``name`` if a profile of that name is stored (a usage error else), read from the profiles topic."""
    if name is None:
        return None
    from dualplane.control_plane.fetcher import ProfileError, read_profiles
    from dualplane.core.exceptions import DualplaneError

    try:
        found = read_profiles(settings.kafka, settings.topics.profiles)
    except ProfileError as error:
        raise DualplaneError(str(error)) from error
    if name not in found:
        known = ", ".join(sorted(found)) or "none yet"
        raise typer.BadParameter(
            f"no profile {name!r} (profiles: {known}); make it with `dualplane profile set`",
            param_hint="--profile",
        )
    return name


def _checked_extractor(extractor: str | None) -> str | None:
    """``extractor`` if it is a plugin name (a usage error else), warned about unless installed here."""
    from dualplane.brokers.amqp.messages import EXTRACTOR_NAME

    if extractor is not None and not re.match(EXTRACTOR_NAME, extractor):
        raise typer.BadParameter(
            f"{extractor!r} is no extractor plugin name (an entry point name of dualplane.extractors)",
            param_hint="--extractor",
        )
    if extractor is not None:
        _warn_unless_installed(extractor)
    return extractor


def _warn_unless_installed(extractor: str) -> None:
    """A plugin the extractors lack dead-letters every page of the job: say so now, not silently.
    A warning, not an error: the extractors may run elsewhere, with plugins this machine lacks."""
    from importlib.metadata import entry_points

    installed = sorted(point.name for point in entry_points(group=EXTRACTOR_GROUP))
    if extractor not in installed:
        stderr.print(
            f"[yellow]warning:[/yellow] --extractor {extractor!r} is no extractor plugin installed here "
            f"(installed: {', '.join(installed) or 'none'}); extractors without it dead-letter every page "
            "of this job",
            soft_wrap=True,
            highlight=False,
        )


def _lane(priority: str) -> Priority:
    return "high" if priority == "high" else "bulk" if priority == "bulk" else "normal"


def _patterns(values: list[str] | None, option: str) -> tuple[str, ...]:
    """The regexes given with ``option``, each checked (the frontier would reject the job)."""
    for pattern in values or ():
        try:
            re.compile(pattern)
        except re.error as error:
            message = f"{pattern!r} is not a regular expression: {error}"
            raise typer.BadParameter(message, param_hint=option) from error
    return tuple(values or ())


def _read_seeds(seeds: list[str], seeds_file: str | None, sitemaps: bool = False) -> list[str]:
    """The ``--seed`` URLs, checked; a ``--seeds-file`` is streamed later, never read whole."""
    from dualplane.brokers.amqp.messages import MAX_URL_CHARS
    from dualplane.core.web.exceptions import InvalidUrl
    from dualplane.core.web.urls import domain_of

    urls = list(seeds)
    if not urls and not seeds_file and not sitemaps:
        raise typer.BadParameter("give at least one --seed URL, a --seeds-file or a --sitemap")
    for url in urls:
        if len(url) > MAX_URL_CHARS:
            message = f"{url[:80]!r}… is {len(url)} characters long; the limit is {MAX_URL_CHARS}"
            raise typer.BadParameter(message, param_hint="--seed")
        try:
            domain_of(url)
        except InvalidUrl as error:
            raise typer.BadParameter(str(error), param_hint="--seed") from error
    return urls


def _report(
    spec: JobSpec,
    seeds: int,
    bad_lines: int,
    result: dict[str, Any] | None,
    verdict: Verdict | None,
    as_json: bool,
) -> None:
    if as_json:
        summary = {"job_id": spec.job_id, "seeds": seeds, "bad_lines": bad_lines, "progress": result}
        if verdict is not None:
            summary.update(finished=verdict.finished, complete=verdict.complete, why=verdict.why)
            summary.update(records=verdict.records, dead_lettered=verdict.dead_lettered)
        print_json(summary)
        return
    if result is None:
        hint = f"follow with `dualplane status --job {spec.job_id}`"
        stdout.print(f"job {spec.job_id}: {seeds} seed(s) submitted; {hint}")
        return
    rows = [[key, str(value)] for key, value in result.items() if key not in ("job_id",)]
    stdout.print(table(f"job {spec.job_id}", ["counter", "value"], rows))
