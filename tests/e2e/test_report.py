"""``dualplane report`` on a real crawl with an anti-bot host, rendered in headless Chromium (Debian's):
the page loads from disk alone, its charts are laid out and drawn, and a screenshot is taken."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.core.web.urls import domain_of
from dualplane.sample_site import AntiBot, SampleSite, SiteSpec
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline, read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=3, domain_delay_ms=10, fetch_concurrency=24),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )


def crawl_until_blocked(settings: Settings, pipeline: Pipeline, site: SampleSite) -> Counter[str]:
    """Crawl until the fetch events hold at least 30 fetches, some of them blocked (429)."""
    for service in ("frontier", "fetcher", "extractor"):
        pipeline.start(service)
    seeds = sorted(site.reachable_urls())[:40]
    JobProbe(settings).submit(JobSpec(job_id="reported", allowed_domains=(domain_of(seeds[0]),)), seeds)
    deadline = time.monotonic() + 120
    outcomes: Counter[str] = Counter()
    while time.monotonic() < deadline:
        outcomes = Counter(e["outcome"] for e in read_topic(settings, settings.topics.fetch_events))
        if outcomes.total() >= 30 and outcomes["rate_limited"] >= 3:
            break
        time.sleep(1)
    return outcomes


def chromium(*args: str, timeout_s: float = 90) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None, (
        "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    )
    command = [
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--virtual-time-budget=5000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)


def test_report_of_a_crawl_renders_its_charts_in_headless_chromium(
    settings: Settings, pipeline: Pipeline, tmp_path: Path
) -> None:
    spec = SiteSpec(seed=5, hosts=1, pages_per_host=30, latency_ms=0, anti_bot=AntiBot(max_rps=3, mode="429"))
    with SampleSite(spec) as site:
        outcomes = crawl_until_blocked(settings, pipeline, site)
    assert outcomes["rate_limited"] >= 3, outcomes

    out = tmp_path / "report"
    result = run_cli("report", "reported", "--output", str(out), "--json", env=settings.to_env())
    assert result.exit_code == 0, result.stderr
    written = result.json()
    assert written["fetch_events"] >= 30
    html = (out / "index.html").read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html), "the report must need no network"
    for title in ("Throughput over time", "Outcomes by class", "Throttle timeline", "Dead letters by reason"):
        assert title in html
    assert "rate_limited" in html  # the outcome class is drawn and tabled
    assert re.search(r"<td>state</td><td>(finished|not finished): ", html)  # the finish rule's verdict
    charts = html.count('<figure class="chart">')
    assert charts >= 4

    dom = chromium("--dump-dom", (out / "index.html").as_uri())
    drawn = re.search(r'data-charts-drawn="(\d+)"', dom.stdout)
    assert drawn is not None, dom.stderr[-2000:]
    assert int(drawn.group(1)) == charts  # every chart laid out with a size and drawn paths

    screenshot = tmp_path / "report.png"
    chromium(f"--screenshot={screenshot}", "--window-size=1280,4000", (out / "index.html").as_uri())
    assert screenshot.exists() and screenshot.stat().st_size > 50_000
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
