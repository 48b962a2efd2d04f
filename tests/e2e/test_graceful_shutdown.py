"""SIGTERM to each service mid-crawl: it stops pulling, finishes or hands back what it holds, exits 0
within 30 s; restarted, the crawl completes and every page is fetched, extracted and archived once."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.archive import all_avro_rows
from tests.support.factories import ControlPlaneFactory, S3BucketFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic
from tests.support.sink import wait_archived, with_sink
from tests.support.site_log import served_pages

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SERVICES = ("fetcher", "extractor", "frontier", "s3-sink", "throttle")  # the busiest first
BOUND_S = 30.0


@pytest.fixture
def settings(control_plane: ControlPlaneFactory, s3_buckets: S3BucketFactory, tmp_path: Path) -> Settings:
    settings = control_plane.settings().model_copy(
        update={
            # slow pages, two in flight per host: requests are running when the fetcher is stopped,
            # and the crawl (about 6 pages/s) is still going while each service stops
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=200, fetch_concurrency=24),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )
    return with_sink(settings, s3_buckets.create(), flush_records=20)


def stop_gracefully(
    pipeline: Pipeline, name: str, running: dict[str, subprocess.Popen[bytes]]
) -> tuple[int, float]:
    """SIGTERM ``name``, wait for it (exit code, seconds taken), then start it again."""
    process = running[name]
    assert process.poll() is None, f"{name} died before its SIGTERM:\n{pipeline.logs()}"
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = int(process.wait(BOUND_S + 30))
    took_s = time.monotonic() - started
    running[name] = pipeline.start(name)
    return code, took_s


def test_sigterm_to_each_service_mid_crawl_exits_0_within_30_s_and_loses_nothing(
    settings: Settings, pipeline: Pipeline
) -> None:
    with SampleSite(SiteSpec(seed=29, hosts=2, pages_per_host=80, latency_ms=400)) as site:
        running: dict[str, subprocess.Popen[bytes]] = {name: pipeline.start(name) for name in SERVICES}
        probe = JobProbe(settings)
        probe.submit(
            JobSpec(job_id="graceful", allowed_domains=tuple(domain_of(s) for s in site.seeds)), site.seeds
        )
        probe.wait_progress_at_least("graceful", "done", 10, timeout_s=90)  # every service is up and busy
        stops = {}
        for name in SERVICES:
            stops[name] = stop_gracefully(pipeline, name, running)
            time.sleep(2)
        done_when_stopped = probe.progress("graceful").get("done")
        probe.wait_finished("graceful", timeout_s=240)
        reachable = {canonicalize(url) for url in site.reachable_urls()}
        served = served_pages(site)
    wait_archived(settings, timeout_s=120)

    print(
        {name: f"exit {code} in {took_s:.1f} s" for name, (code, took_s) in stops.items()}, done_when_stopped
    )
    assert {name: code for name, (code, _) in stops.items()} == dict.fromkeys(SERVICES, 0), pipeline.trouble()
    assert max(took_s for _, took_s in stops.values()) < BOUND_S, stops
    pages = Counter(canonicalize(page["url"]) for page in read_topic(settings, settings.topics.pages_raw))
    assert set(pages) == reachable, pipeline.logs()  # nothing lost
    assert set(pages.values()) == {1}, "a page reached pages.raw twice"
    assert served == pages, "the site served a page twice: a running request was abandoned and sent again"
    records = Counter(canonicalize(r["url"]) for r in read_topic(settings, settings.topics.records))
    assert records == pages  # every page extracted once (transactions: none twice)
    archived = Counter(canonicalize(row["url"]) for row in all_avro_rows(settings, settings.sink_bucket))
    assert archived == records  # and archived once
