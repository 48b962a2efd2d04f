"""Script-drawn shops crawled by the real pipeline: prices only with a browser or auto profile.

One pipeline (frontier, fetcher, extractor as processes, Debian's chromium) crawls three of the
sample site's JS shop hosts in one job, after ``dualplane profile set`` gave the first the browser
backend and the second ``auto`` while the fetcher was already running. Their products all come
with the price, currency and stock the site's truth says (auto learnt from its first page that the
host needs rendering), although the fetcher's browser is killed in the middle of the crawl (its
renders are retried, none is lost); the third host's, without a profile, with no price at all.
"""

from __future__ import annotations

import os
import signal
import time
from decimal import Decimal
from pathlib import Path

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.data_plane.extractor.records import PageRecord, iter_records
from dualplane.sample_site import SampleSite, SiteSpec
from tests.e2e.local_site import local_site_settings
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RENDERED, AUTO, PLAIN = 0, 2, 3  # three script-drawn shops: browser, auto, and no profile
SITE = SiteSpec(seed=11, hosts=4, pages_per_host=6, latency_ms=5, js_hosts=(RENDERED, AUTO, PLAIN))
AVAILABILITY = {
    "https://schema.org/InStock": "in_stock",
    "https://schema.org/OutOfStock": "out_of_stock",
    "https://schema.org/LimitedAvailability": "limited",
    "https://schema.org/PreOrder": "preorder",
}


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return local_site_settings(control_plane, domain_concurrency=4, fetch_concurrency=8, domain_delay_ms=10)


@pytest.mark.timeout(300)
def test_js_shop_prices_come_only_with_a_browser_profile_and_survive_a_browser_crash(
    settings: Settings, pipeline: Pipeline
) -> None:
    with SampleSite(SITE) as site:
        for service in ("frontier", "extractor"):
            pipeline.start(service)
        fetcher = pipeline.start("fetcher")
        rendered, plain, auto = site.spec.origin(RENDERED), site.spec.origin(PLAIN), site.spec.origin(AUTO)
        truths = {
            canonicalize(p.url): p
            for p in site.truth().products
            if p.url.startswith((rendered + "/", auto + "/"))
        }
        untouched = {canonicalize(p.url) for p in site.truth().products if p.url.startswith(plain + "/")}
        made = run_cli(
            "profile", "set", "js-shop", "--domain", domain_of(rendered), "--backend", "browser",
            "--wait-selector", "body[data-priced]", "--json", env=settings.to_env(),
        )  # fmt: skip
        assert made.exit_code == 0, made.stderr
        made = run_cli(
            "profile", "set", "js-auto", "--domain", domain_of(auto), "--backend", "auto",
            "--wait-selector", "body[data-priced]", "--json", env=settings.to_env(),
        )  # fmt: skip
        assert made.exit_code == 0, made.stderr
        time.sleep(1)  # the running fetcher follows the profiles topic (within about a second)

        probe = JobProbe(settings)
        domains = (domain_of(rendered), domain_of(plain), domain_of(auto))
        seeds = sorted(set(truths) | untouched)  # the products themselves: no hops through listings first
        probe.submit(JobSpec(job_id="shops", allowed_domains=domains), seeds)
        assert wait_for(lambda: api_calls(site) >= 2, timeout_s=120, interval_s=0.1), pipeline.logs()
        killed = kill_browsers(fetcher.pid)
        probe.wait_finished("shops", timeout_s=240)
        found = records(settings, "shops", set(truths) | untouched, pipeline)

    assert killed >= 1, "no browser of the fetcher was found to kill"
    assert api_calls(site, PLAIN) == 0
    assert all(not (product := found[url].product) or product.price is None for url in untouched)
    for url, truth in truths.items():
        product = found[url].product
        assert product is not None, url
        assert (product.price, product.currency) == (Decimal(truth.price), truth.currency), url
        assert product.availability == AVAILABILITY[truth.availability], url


def records(settings: Settings, job_id: str, urls: set[str], pipeline: Pipeline) -> dict[str, PageRecord]:
    """The job's records of ``urls``, once the extractor has written them all."""
    found: dict[str, PageRecord] = {}

    def complete() -> bool:
        for record in iter_records(settings, follow=False, job_id=job_id):
            found[record.canonical_url] = record
        return urls <= set(found)

    assert wait_for(complete, timeout_s=120, interval_s=1), f"missing {urls - set(found)}\n{pipeline.logs()}"
    return found


def api_calls(site: SampleSite, host: int = RENDERED) -> int:
    """How often a browser asked a JS shop host for a product's price (only browsers do)."""
    return sum(1 for entry in site.log(host) if entry.path.startswith("/api/products/"))


def kill_browsers(ancestor: int) -> int:
    """SIGKILL every main browser process (no ``--type=``) descending from process ``ancestor``."""
    parents: dict[int, int] = {}
    commands: dict[int, list[bytes]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            commands[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
    killed = 0
    for pid, arguments in commands.items():
        is_browser = any(b"host-resolver-rules" in a for a in arguments) and not any(
            a.startswith(b"--type=") for a in arguments
        )
        if is_browser and _descends(pid, ancestor, parents):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def _descends(pid: int, ancestor: int, parents: dict[int, int]) -> bool:
    for _ in range(64):
        pid = parents.get(pid, 0)
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False
