"""``dualplane crawl --sitemap URL`` / ``--sitemaps-from-robots``: a job's seeds read from sitemaps.

Read here, at submit time, with the library a monitor will call on a schedule
(:mod:`control_plane.frontier.sitemaps`); each bad sitemap becomes a dead letter with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from dualplane.cli.output import stderr

if TYPE_CHECKING:
    from pika.adapters.blocking_connection import BlockingChannel

    from brokers.amqp.messages import JobSpec
    from brokers.amqp.topology import Topology
    from control_plane.frontier.sitemaps import SitemapReader
    from core.settings import Settings
    from core.web.sitemaps import SitemapEntry


def submit_sitemaps(
    settings: Settings,
    channel: BlockingChannel,
    topology: Topology,
    spec: JobSpec,
    sitemaps: list[str],
    robots_of: list[str],
) -> int:
    """Read ``sitemaps`` and those named by the robots.txt of each of ``robots_of``'s hosts; submit
    their pages as seeds of ``spec``'s job (submitted already); return how many."""
    from control_plane.frontier.sitemap_seeds import dead_letter_sitemap, submit_sitemap_seeds
    from control_plane.frontier.sitemaps import SitemapProblem, SitemapReader
    from core.web.client import GuardedClient
    from core.web.client_thread import ClientThread
    from core.web.ssrf import SsrfGuard

    def on_problem(problem: SitemapProblem) -> None:
        dead_letter_sitemap(channel, topology, spec.job_id, problem)
        stderr.print(f"[yellow]sitemap problem:[/yellow] {problem.reason}", soft_wrap=True, highlight=False)

    guard = SsrfGuard.from_setting(settings.fetch.allow_hosts)
    client = ClientThread(GuardedClient(guard, user_agent=settings.fetch.user_agent), name="sitemaps")
    try:
        reader = SitemapReader(client, on_problem=on_problem)
        count = submit_sitemap_seeds(channel, topology, spec, _entries(reader, sitemaps, robots_of))
    finally:
        client.close()
    stats = reader.stats
    stderr.print(
        f"sitemaps: {stats.sitemaps_read} read, {stats.pages:,} page(s) submitted, "
        f"{stats.out_of_scope:,} out of scope, {stats.bad_locs:,} bad <loc>, {stats.problems} problem(s)"
        + (" (see `dualplane dlq list`)" if stats.problems else ""),
        highlight=False,
    )
    return count


def _entries(reader: SitemapReader, sitemaps: list[str], robots_of: list[str]) -> Iterator[SitemapEntry]:
    from control_plane.frontier.robots import RobotsCache

    for url in sitemaps:
        yield from reader.entries(url)
    origins = {RobotsCache.origin_of(site): site for site in robots_of}  # one robots.txt per origin
    for site in origins.values():
        for url in reader.robots_sitemaps(site):
            yield from reader.entries(url, robots_site=site)
