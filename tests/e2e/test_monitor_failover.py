"""A monitor's schedule survives kill -9 of its shard's frontier: the standby goes on with it.

One shard, an active frontier and a standby (each its own data directory, as on two machines), and
a fetcher, as processes. A monitor revisits every page of a small site every ``INTERVAL_S`` (its
interval pinned: min = max). Mid-monitor the active frontier is killed with SIGKILL; the standby
takes the shard over from the changelog. Checked from the fetch events: every page of the first
visit is revisited after the kill (none lost from the schedule, the ones that fell due meanwhile
caught up), and no page is fetched twice within one interval, before, across or after the kill.
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import MonitorSpec, visit_job_id
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.client import JobClient
from dualplane.control_plane.frontier.monitor_client import MonitorClient
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.sample_site import Changes, SampleSite, SiteSpec
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = SiteSpec(seed=5, hosts=1, pages_per_host=20, latency_ms=0, changes=Changes(3600.0, share=0.1))
INTERVAL_S = 4
MONITOR = "durable"
# Due times are whole seconds: a row reported at t is due at floor(t) + interval, and a fetch event
# is stamped as the request starts, so two fetches of a page are at least this far apart.
SLACK_S = 1.5


def _seconds(value: Any) -> float:
    return (
        value.timestamp() if isinstance(value, datetime) else datetime.fromisoformat(str(value)).timestamp()
    )


@pytest.mark.timeout(300)
def test_the_standby_keeps_the_schedule_after_kill_9(
    control_plane: ControlPlaneFactory, tmp_path: Path
) -> None:
    settings: Settings = control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=8, domain_delay_ms=0, fetch_concurrency=16),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", delay_jitter=0, permit_wait_s=0.5),
        }
    )
    pipeline = Pipeline(settings, tmp_path)
    probe = JobProbe(settings)
    try:
        with SampleSite(SITE) as site:
            active = pipeline.start("frontier", env={"DUALPLANE_FRONTIER_DATA_DIR": str(tmp_path / "active")})
            queue = Topology(settings.queues).frontier_queue(0)
            assert wait_for(lambda: probe.consumers(queue) > 0, 60), pipeline.logs()
            pipeline.start("frontier", env={"DUALPLANE_FRONTIER_DATA_DIR": str(tmp_path / "standby")})
            pipeline.start("fetcher")
            job = JobClient(settings).spec(visit_job_id(MONITOR, 1), site.seeds, monitor=MONITOR)
            spec = MonitorSpec(monitor_id=MONITOR, job=job, interval_s=INTERVAL_S, min_interval_s=INTERVAL_S,
                               max_interval_s=INTERVAL_S)  # fmt: skip
            MonitorClient(settings).create(spec, site.seeds)

            def revisits() -> list[dict[str, Any]]:
                return [e for e in read_topic(settings, settings.topics.fetch_events)
                        if e["job_id"].startswith(f"{MONITOR}-v") and e["job_id"] != job.job_id]  # fmt: skip

            assert wait_for(lambda: len(revisits()) > 0, 30, 0.5), pipeline.logs()
            pipeline.kill(active)
            killed_at = time.time()
            # Pages the first visit found stay scheduled; its redirects and 404s leave the schedule.
            kept = {
                e["url"]
                for e in read_topic(settings, settings.topics.fetch_events)
                if e["job_id"] == job.job_id and e["outcome"] in ("ok", "not_modified")
            }

            def caught_up() -> bool:
                after = {e["url"] for e in revisits() if _seconds(e["fetched_at"]) > killed_at + 1}
                return after >= kept

            assert wait_for(caught_up, 90, 1.0), f"{pipeline.trouble()}\n{pipeline.logs()}"
            events = read_topic(settings, settings.topics.fetch_events)
            first = {e["url"] for e in events if e["job_id"] == job.job_id}
    finally:
        pipeline.stop_all()

    fetched: dict[str, list[float]] = defaultdict(list)
    for event in events:
        if event["job_id"].startswith(f"{MONITOR}-v"):
            fetched[event["url"]].append(_seconds(event["fetched_at"]))
    assert set(fetched) == first
    for url, times in fetched.items():
        gaps = [later - earlier for earlier, later in zip(sorted(times), sorted(times)[1:], strict=False)]
        assert min(gaps, default=INTERVAL_S) >= INTERVAL_S - SLACK_S, (  # a redirect: fetched once
            f"{url} fetched twice within {INTERVAL_S} s: {sorted(times)}"
        )
    assert len(pipeline.lines("active (caught up")) >= 2, pipeline.logs()  # the standby took over
