"""The extractor's contract: every fetched page yields exactly one committed record, crashes or not."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.extractor.records import iter_records
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def crawl_settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=3, domain_delay_ms=20, fetch_concurrency=24),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )


@pytest.fixture
def pipeline(crawl_settings: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    pipeline = Pipeline(crawl_settings, tmp_path)
    yield pipeline
    pipeline.stop_all()


def _records_per_page(settings: Settings, expected: int, timeout_s: float = 90) -> Counter[str]:
    """Committed records per page URL, waiting for aborted transactions of killed extractors to expire."""
    deadline = time.monotonic() + timeout_s
    counts: Counter[str] = Counter()
    while time.monotonic() < deadline:
        counts = Counter(record.url for record in iter_records(settings, follow=False))
        if sum(counts.values()) >= expected:
            break
        time.sleep(2)
    return counts


@pytest.mark.parametrize("kills", [0, 2], ids=["steady", "extractor-killed-twice"])
def test_every_fetched_page_yields_exactly_one_committed_record(
    crawl_settings: Settings, pipeline: Pipeline, kills: int
) -> None:
    with SampleSite(SiteSpec(seed=17, hosts=2, pages_per_host=40, latency_ms=5)) as site:
        pipeline.start("frontier")
        pipeline.start("fetcher")
        extractor = pipeline.start("extractor")
        probe = JobProbe(crawl_settings)
        domains = tuple(domain_of(seed) for seed in site.seeds)
        probe.submit(JobSpec(job_id="records", allowed_domains=domains), site.seeds)
        for _ in range(kills):
            time.sleep(3)
            pipeline.kill(extractor)
            extractor = pipeline.start("extractor")
        probe.wait_finished("records", timeout_s=240)

    pages = Counter(page["url"] for page in read_topic(crawl_settings, crawl_settings.topics.pages_raw))
    records = _records_per_page(crawl_settings, expected=len(pages))
    assert set(records) == set(pages), pipeline.logs()
    assert set(records.values()) == {1}, f"duplicates: {[u for u, n in records.items() if n > 1][:5]}"
