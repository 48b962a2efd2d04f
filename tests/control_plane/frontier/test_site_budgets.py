"""Per-domain budgets and trap limits in the real frontier: a profile's, a job's, and after a takeover."""

from __future__ import annotations

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.control_plane.fetcher import profile_store
from dualplane.control_plane.fetcher.profiles import Profile
from dualplane.core.settings import Settings
from dualplane.core.web.site_scope import SiteScope
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import RunningFrontier

pytestmark = pytest.mark.integration

FACETS, PLAIN = "http://facets.example", "http://plain.example"


def test_a_profiles_budget_and_trap_limits_hold_its_domain_and_survive_a_takeover(
    control_plane: ControlPlaneFactory,
) -> None:
    settings = control_plane.settings()
    scope = SiteScope(page_budget=5, max_query_params=1, max_repeated_segments=1)
    profile_store.put(
        settings.kafka, settings.topics.profiles, Profile("facets", ("facets.example",), scope=scope)
    )
    spec = JobSpec(job_id="faceted", obey_robots=False)
    traps = [f"{FACETS}/products?page=1&color=red&size={i}" for i in range(4)] + [
        f"{FACETS}/all/all/{i}" for i in range(3)
    ]
    pages = [f"{FACETS}/product/{i}" for i in range(8)] + [f"{PLAIN}/product/{i}" for i in range(8)]

    running = RunningFrontier(settings).start()
    try:
        running.submit(spec, traps + pages)
        running.wait_progress("faceted", seeded=23, out_of_scope=7, discovered=13, over_limit=3, queued=13)
    finally:
        running.stop()

    # Another machine takes the shard over: it has only the changelog, and the budget is still spent.
    moved = _elsewhere(settings)
    running = RunningFrontier(moved).start()
    try:
        running.submit(spec, [f"{FACETS}/product/{i}" for i in range(8, 12)] + [f"{PLAIN}/product/8"])
        running.wait_progress("faceted", seeded=28, discovered=14, over_limit=7, queued=14)
    finally:
        running.stop()


def test_a_jobs_domain_budget_applies_to_every_domain_and_a_profile_may_tighten_it(
    control_plane: ControlPlaneFactory,
) -> None:
    settings = control_plane.settings()
    profile_store.put(
        settings.kafka,
        settings.topics.profiles,
        Profile("tight", ("a.example",), scope=SiteScope(page_budget=1)),
    )
    spec = JobSpec(job_id="budgeted", domain_budget=3, obey_robots=False)
    seeds = [f"http://{host}.example/{i}" for host in ("a", "b", "c") for i in range(5)]

    running = RunningFrontier(settings).start()
    try:
        running.submit(spec, seeds)
        running.wait_progress("budgeted", seeded=15, discovered=7, over_limit=8, queued=7)
    finally:
        running.stop()


def test_the_cli_sets_scope_on_a_profile_a_crawl_and_a_monitor(control_plane: ControlPlaneFactory) -> None:
    settings = control_plane.settings()
    env = settings.to_env()
    made = run_cli(
        "profile", "set", "shop", "--domain", "shop.example", "--page-budget", "2", "--deny", "/cart",
        "--max-query-params", "1", "--json", env=env,
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    assert made.json()["profile"]["scope"] == {"page_budget": 2, "deny": ["/cart"], "max_query_params": 1}

    running = RunningFrontier(settings).start()
    try:
        seeds = [f"--seed=http://{host}.example/product/{i}" for host in ("shop", "other") for i in range(4)]
        crawled = run_cli(
            "crawl", *seeds, "--seed=http://other.example/about", "--allow", "/product/",
            "--domain-budget", "3", "--ignore-robots", "--job", "flagged", env=env,
        )  # fmt: skip
        assert crawled.exit_code == 0, crawled.stderr
        running.wait_progress("flagged", seeded=9, out_of_scope=1, discovered=5, over_limit=3)

        created = run_cli(
            "monitor", "create", "--monitor", "watch", "--seed", "http://shop.example/", "--deny", "/cart",
            "--extractor", "shop-plugin", "--domain-budget", "4", env=env,
        )  # fmt: skip
        assert created.exit_code == 0, created.stderr
        running.wait_progress("watch-v1", seeded=1, discovered=1)
        visit = running.frontier.state.job("watch-v1")
    finally:
        running.stop()
    assert visit is not None
    assert (visit.deny_patterns, visit.extractor, visit.domain_budget) == (("/cart",), "shop-plugin", 4)


def _elsewhere(settings: Settings) -> Settings:
    directory = settings.frontier_dir.parent / "another-machine"
    return settings.model_copy(
        update={"frontier": settings.frontier.model_copy(update={"data_dir": directory})}
    )
