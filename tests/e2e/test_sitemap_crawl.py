"""``dualplane crawl --sitemaps-from-robots`` on the sample site: every URL its sitemap lists is
fetched (and nothing else, at depth 0), and a sitemap that is not there is a dead letter with its
reason, shown by ``dualplane dlq list``."""

from __future__ import annotations

import html
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.core.settings import Settings
from dualplane.core.web.urls import canonicalize
from dualplane.sample_site import Changes, SampleSite, SiteSpec
from tests.e2e.local_site import local_site_settings, running
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = SiteSpec(seed=5, hosts=1, pages_per_host=40, latency_ms=2, changes=Changes(60.0, share=0.2))


@pytest.fixture
def private(control_plane: ControlPlaneFactory) -> Settings:
    return local_site_settings(control_plane, domain_concurrency=4, fetch_concurrency=16, delay_jitter=0)


@pytest.fixture
def pipeline(private: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    yield from running(private, tmp_path)


def listed(sitemap_url: str) -> set[str]:
    """The sitemap's <loc>s, read apart from the code under test."""
    with urllib.request.urlopen(sitemap_url, timeout=10) as answer:
        body = answer.read().decode()
    return {canonicalize(html.unescape(loc)) for loc in re.findall(r"<loc>(.*?)</loc>", body)}


def test_crawl_from_the_robots_sitemap_fetches_every_listed_url_and_dead_letters_a_missing_one(
    private: Settings, pipeline: Pipeline
) -> None:
    with SampleSite(SITE) as site:
        origin = site.seeds[0].rstrip("/")
        expected = listed(f"{origin}/sitemap.xml")
        pipeline.start("frontier")
        pipeline.start("fetcher")
        submitted = run_cli(
            "crawl", "--seed", f"{origin}/", "--sitemaps-from-robots", "--sitemap", f"{origin}/missing.xml",
            "--max-depth", "0", "--job", "from-sitemaps", "--json",
            env=private.to_env(), timeout_s=60,
        )  # fmt: skip
        assert submitted.exit_code == 0, submitted.stderr
        fetched: set[str] = set()
        deadline = time.monotonic() + 60
        while not fetched >= expected:
            missing = sorted(expected - fetched)[:5]
            assert time.monotonic() < deadline, f"not fetched: {missing}\n{pipeline.logs()}"
            time.sleep(0.25)
            fetched = {canonicalize(page["url"]) for page in read_topic(private, private.topics.pages_raw)}
        letters = run_cli("dlq", "list", "--json", env=private.to_env(), timeout_s=60)

    assert len(expected) > 40 and f"{origin}/sitemap.xml" not in expected
    assert fetched == expected  # depth 0: the sitemap's pages, no link followed
    assert submitted.json()["seeds"] == 1 + len(expected)  # the --seed, then each listed page
    assert "sitemaps: 1 read" in submitted.stderr and "1 problem(s)" in submitted.stderr
    [letter] = letters.json()
    origin_of_letter = (letter["kind"], letter["job_id"], letter["source_queue"])
    assert origin_of_letter == ("sitemap", "from-sitemaps", "sitemaps")
    assert letter["reason"] == f"{origin}/missing.xml: sitemap unavailable: HTTP 404"
