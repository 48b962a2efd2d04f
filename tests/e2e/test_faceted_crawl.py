"""A faceted shop in one job with two plain hosts: its profile's budget and trap limits hold it.

The real pipeline (frontier, fetcher and extractor as processes) crawls the sample site from each
host's home page. Host 0 has filter links and two endless traps beside its real pages; a profile
set with ``dualplane profile set`` gives it a page budget and a query-parameter limit. The faceted
host is fetched no more than its budget allows, the job finishes (without the profile it would
never end), and the two other hosts are crawled whole: every page of theirs is fetched.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import Settings
from dualplane.core.web.urls import domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.sample_site.reachability import reachable_urls
from tests.e2e.local_site import local_site_settings
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FACETED, BUDGET = 0, 20
SITE = SiteSpec(seed=13, hosts=3, pages_per_host=6, latency_ms=5, faceted_hosts=(FACETED,))


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return local_site_settings(control_plane, domain_concurrency=4, fetch_concurrency=8, domain_delay_ms=10)


@pytest.mark.timeout(300)
def test_the_faceted_host_stays_within_its_budget_and_the_others_are_crawled_whole(
    settings: Settings, pipeline: Pipeline
) -> None:
    with SampleSite(SITE) as site:
        faceted = domain_of(site.spec.origin(FACETED))
        made = run_cli(
            "profile", "set", "facets", "--domain", faceted, "--page-budget", str(BUDGET),
            "--max-query-params", "1", "--json", env=settings.to_env(),
        )  # fmt: skip
        assert made.exit_code == 0, made.stderr
        for service in ("frontier", "fetcher", "extractor"):
            pipeline.start(service)

        probe = JobProbe(settings)
        domains = tuple(domain_of(origin) for origin in site.spec.origins())
        probe.submit(
            JobSpec(job_id="facets", allowed_domains=domains), [f"{o}/" for o in site.spec.origins()]
        )
        progress = probe.wait_finished("facets", timeout_s=240)
        fetched = {host: {e.path for e in site.log(host) if e.path != "/robots.txt"} for host in range(3)}

    assert len(fetched[FACETED]) <= BUDGET, sorted(fetched[FACETED])
    assert any(path.startswith(("/events/", "/browse/")) for path in fetched[FACETED])  # it met the traps
    assert not any("color=" in path for path in fetched[FACETED])  # filters: 2 query parameters
    assert progress["over_limit"] and progress["out_of_scope"], progress  # both rules had work
    for host in (1, 2):
        whole = {_path_qs(url) for url in reachable_urls(site.spec) if domain_of(url) == domains[host]}
        assert whole <= fetched[host], sorted(whole - fetched[host])


def _path_qs(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")
