"""What the e2e tests that crawl a site served on this machine share: settings that let the fetchers
reach 127.0.0.1 and wait only briefly for a permit, their pipeline's life, and following a job to its end.

The sample site, a local shop and a sitemap server all listen on loopback, which the fetchers refuse
by default (SSRF guard); each test chooses how hard it crawls.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dualplane.control_plane.frontier.client import JobClient
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from tests.support.factories import ControlPlaneFactory
from tests.support.pipeline import Pipeline


def local_site_settings(
    control_plane: ControlPlaneFactory,
    *,
    domain_concurrency: int,
    fetch_concurrency: int,
    domain_delay_ms: int = 0,
    **fetch: Any,
) -> Settings:
    """The control plane's private settings with these limits; ``fetch``: further FetchSettings."""
    return control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(
                domain_concurrency=domain_concurrency,
                domain_delay_ms=domain_delay_ms,
                fetch_concurrency=fetch_concurrency,
            ),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5, **fetch),
        }
    )


def running(settings: Settings, tmp_path: Path) -> Iterator[Pipeline]:
    """Fixture body: a pipeline with ``settings``, every service it started stopped afterwards."""
    made = Pipeline(settings, tmp_path)
    try:
        yield made
    finally:
        made.stop_all()


def finished(settings: Settings, job_id: str, pipeline: Pipeline, seeds: int | None = None) -> dict[str, Any]:
    """Follow ``job_id`` to its end (90 s at the most) and return its last progress snapshot; the
    services' logs when it did not finish."""
    snapshot, verdict = list(JobClient(settings).follow(job_id, timeout_s=90, seeds=seeds, quiet_s=1.0))[-1]
    assert verdict.finished, f"{job_id}: {verdict}\n{pipeline.logs()}"
    assert snapshot is not None
    return snapshot
