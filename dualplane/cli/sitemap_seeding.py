"""``dualplane crawl --sitemap URL`` / ``--sitemaps-from-robots``: a job's seeds read from sitemaps.

Read at submit time by the job client (:meth:`~control_plane.frontier.client.JobClient.seed_from_sitemaps`,
with the library a monitor calls on a schedule); this module only tells the user what happened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dualplane.cli.output import stderr

if TYPE_CHECKING:
    from dualplane.brokers.amqp.messages import JobSpec
    from dualplane.control_plane.frontier import JobClient, SitemapProblem


def submit_sitemaps(jobs: JobClient, spec: JobSpec, sitemaps: list[str], robots_of: list[str]) -> int:
    """Seed ``spec``'s job (submitted already) from ``sitemaps`` and the robots.txt sitemaps of
    ``robots_of``'s hosts, each problem and the summary on stderr; the pages submitted."""

    def on_problem(problem: SitemapProblem) -> None:
        stderr.print(f"[yellow]sitemap problem:[/yellow] {problem.reason}", soft_wrap=True, highlight=False)

    stats = jobs.seed_from_sitemaps(spec, sitemaps, robots_of, on_problem)
    stderr.print(
        f"sitemaps: {stats.sitemaps_read} read, {stats.pages:,} page(s) submitted, "
        f"{stats.out_of_scope:,} out of scope, {stats.bad_locs:,} bad <loc>, {stats.problems} problem(s)"
        + (" (see `dualplane dlq list`)" if stats.problems else ""),
        highlight=False,
    )
    return stats.pages
