"""``monitor create --wait`` and ``monitor visit --wait`` follow the visit to its end, as ``crawl
--wait`` does: exit 0 with every page's record committed, exit 1 when the time runs out first."""

from __future__ import annotations

import pytest

from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e]

MONITOR = "waited"
PAGES = 4


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings(frontier_shards=1).model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=4, domain_delay_ms=0, fetch_concurrency=16),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0, permit_wait_s=0.5),
        }
    )


def test_create_and_visit_wait_for_the_visit_and_say_how_it_ended(
    settings: Settings, pipeline: Pipeline
) -> None:
    env = settings.to_env()
    with SampleSite(SiteSpec(seed=5, hosts=1, pages_per_host=20, latency_ms=0)) as site:
        for service in ("frontier", "fetcher", "extractor"):
            pipeline.start(service)
        # Product pages only, no links followed: the sample site's redirects (/old/...) are fetched
        # tasks without a record of their own, which `--wait` would rightly call incomplete (exit 3).
        products = sorted(url for url in site.reachable_urls() if "/product/" in url)[:PAGES]
        seeds = [arg for url in products for arg in ("--seed", url)]
        create = run_cli(
            "monitor", "create", "--monitor", MONITOR, *seeds, "--max-depth", "0", "--wait", "--timeout",
            "120s", "--json", env=env, timeout_s=180,
        )  # fmt: skip
        visit = run_cli(
            "monitor", "visit", MONITOR, "--wait", "--timeout", "120s", "--json", env=env, timeout_s=180
        )
        short = run_cli(
            "monitor", "visit", MONITOR, "--wait", "--timeout", "1s", "--json", env=env, timeout_s=60
        )

    assert create.exit_code == 0, f"{create.stderr}\n{pipeline.logs()}"
    created = create.json()
    assert (created["monitor_id"], created["finished"], created["complete"]) == (MONITOR, True, True), created
    assert (created["seeds"], created["records"]) == (PAGES, PAGES), created
    assert visit.exit_code == 0, f"{visit.stderr}\n{pipeline.logs()}"
    visited = visit.json()
    assert (visited["job_id"], visited["finished"], visited["complete"]) != (
        created["first_visit_job"],
        False,
        False,
    )
    assert visited["finished"] and visited["complete"], visited
    assert short.exit_code == 1, short.stderr
    assert short.json()["finished"] is False and "within 1 s" in short.stderr, short.stderr
