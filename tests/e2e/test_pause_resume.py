"""``job pause --wait`` holds a job and ``job resume`` lets it go on, losing nothing: judged by the
site's own request log (no request of the job while paused; every page served exactly once) and by
the finish rule (every record committed)."""

from __future__ import annotations

import time

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic
from tests.support.site_log import served_pages

pytestmark = [pytest.mark.e2e]

JOB = "pause-resume"
HELD_S = 5.0  # looked at this long after `pause --wait` returned: tasks in the lanes came round


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    # 2 requests in flight on the one host, 250 ms each (with 200 pages): about 8 pages a second, so the
    # crawl is mid-way for ~25 s; `job pause` must land within that even at a CI load of 60 (30 ms
    # pages once let the whole crawl finish before the pause reached it).
    return control_plane.settings(frontier_shards=1).model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=2, domain_delay_ms=0, fetch_concurrency=8),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )


def test_a_paused_job_fetches_nothing_and_after_resume_finishes_with_every_page_once(
    settings: Settings, pipeline: Pipeline
) -> None:
    env = settings.to_env()
    with SampleSite(SiteSpec(seed=21, hosts=1, pages_per_host=200, latency_ms=250)) as site:
        for service in ("frontier", "fetcher", "extractor"):
            pipeline.start(service)
        probe = JobProbe(settings)
        probe.submit(JobSpec(job_id=JOB, allowed_domains=(domain_of(site.seeds[0]),)), site.seeds)
        probe.wait_progress_at_least(JOB, "done", 10, timeout_s=120)

        paused = run_cli("job", "pause", JOB, "--wait", "--timeout", "60s", "--json", env=env, timeout_s=90)
        returned_at = time.time()
        assert paused.exit_code == 0, paused.stderr
        assert paused.json() == {"job_id": JOB, "paused": True, "fetchers_confirmed": 1}
        time.sleep(HELD_S)
        pages = [e for e in site.log(0) if e.path != "/robots.txt" and not e.path.startswith("/_")]
        late = [e.path for e in pages if e.time - e.duration_ms / 1000 > returned_at]
        status = run_cli("status", "--job", JOB, "--json", env=env)
        assert status.exit_code == 0, status.stderr
        held = status.json()["job"]

        resumed = run_cli("job", "resume", JOB, "--json", env=env)
        assert resumed.exit_code == 0, resumed.stderr
        progress = probe.wait_finished(JOB, timeout_s=180)
        served = served_pages(site)
        reachable = {canonicalize(url) for url in site.reachable_urls()}

    assert late == [], f"{len(late)} fetch(es) started after `job pause --wait` returned: {late[:5]}"
    assert held["state"] == "paused", held
    assert int(held["backlog"]) + int(held["queued"]) > 0, (
        "nothing was left to hold: the pause proved nothing"
    )
    assert resumed.json() == {"job_id": JOB, "paused": False}
    assert set(served) == reachable, pipeline.logs()
    assert set(served.values()) == {1}, "a page was fetched twice"
    raw = [record["url"] for record in read_topic(settings, settings.topics.pages_raw)]
    assert sorted(raw) == sorted(served), "the site's log and pages.raw disagree"
    assert progress["dead_lettered"] == 0 and not progress.get("paused_at"), progress
