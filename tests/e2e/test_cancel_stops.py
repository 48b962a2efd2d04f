"""``job cancel --wait`` means stop: once it returns, no fetcher starts a fetch of the job, even with
one fetcher killed with SIGKILL mid-cancel (its tasks go back to the lanes, where the other fetcher
must drop them) and tasks waiting for permits in the survivor. Judged by the site's own request log.
"""

from __future__ import annotations

import time

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e]

JOB = "cancel-stops"
AFTER_S = 4.0  # looked at this long after the return: a killed fetcher's tasks are back in the lanes


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    # 8 requests per host in flight, of 32 per fetcher: most of each fetcher's tasks wait for a permit.
    return control_plane.settings(frontier_shards=1).model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=8, domain_delay_ms=0, fetch_concurrency=32),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )


def test_no_fetch_starts_after_cancel_wait_returns_even_with_a_fetcher_killed(
    settings: Settings, pipeline: Pipeline
) -> None:
    with SampleSite(SiteSpec(seed=34, hosts=1, pages_per_host=1500, latency_ms=100)) as site:
        pipeline.start("frontier")
        fetchers = [pipeline.start("fetcher"), pipeline.start("fetcher")]
        probe = JobProbe(settings)
        probe.submit(JobSpec(job_id=JOB, allowed_domains=(domain_of(site.seeds[0]),)), site.seeds)
        probe.wait_progress_at_least(JOB, "done", 12, timeout_s=120)  # both fetchers busy

        pipeline.kill(fetchers[0])
        cancel = run_cli("job", "cancel", JOB, "--wait", "--json", env=settings.to_env(), timeout_s=120)
        returned_at = time.time()
        assert cancel.exit_code == 0, cancel.stderr
        assert cancel.json()["fetchers_confirmed"] == 1  # the survivor; the dead one is not waited for
        time.sleep(AFTER_S)

        pages = [
            entry for entry in site.log(0) if entry.path != "/robots.txt" and not entry.path.startswith("/_")
        ]
        late = [e.path for e in pages if e.time - e.duration_ms / 1000 > returned_at]
        assert late == [], f"{len(late)} fetch(es) started after `job cancel --wait` returned: {late[:5]}"
        assert len(pages) < 1500, "the job ran to its end: the cancel landed too late to show anything"
        assert fetchers[1].poll() is None, pipeline.logs()
