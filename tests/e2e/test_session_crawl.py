"""Consent and login hosts crawled by the real pipeline: prices only through the profiles' sessions.

The sample site's host 0 sends every page to its consent form until the region cookie comes; host
2 sends product pages to its login form. Two profiles set with ``dualplane profile set`` post those
forms (the login's password read from the fetcher's environment, ``env:``), and every product page
of both hosts then comes with the price and currency the site's truth says. The password is in no
log of any service, and the one login and one consent post were made once each.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.settings import Settings
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.sample_site.sessions import PASSWORD, REGION, USER
from tests.e2e.local_site import local_site_settings
from tests.e2e.test_rendered_crawl import records
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CONSENT, LOGIN = 0, 2
SITE = SiteSpec(
    seed=17, hosts=3, pages_per_host=6, latency_ms=5, consent_hosts=(CONSENT,), login_hosts=(LOGIN,)
)


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return local_site_settings(control_plane, domain_concurrency=4, fetch_concurrency=8, domain_delay_ms=10)


@pytest.mark.timeout(300)
def test_consent_and_login_hosts_give_every_price_through_the_profiles_sessions(
    settings: Settings, pipeline: Pipeline
) -> None:
    with SampleSite(SITE) as site:
        env = settings.to_env()
        consent, login = domain_of(site.spec.origin(CONSENT)), domain_of(site.spec.origin(LOGIN))
        for made in (
            run_cli("profile", "set", "region", "--domain", consent, "--consent", "/consent",
                    "--consent-field", f"region={REGION}", env=env),
            run_cli("profile", "set", "members", "--domain", login, "--login", "/login", "--login-field",
                    f"user={USER}", "--login-field", "password=env:SHOP_PASSWORD", env=env),
        ):  # fmt: skip
            assert made.exit_code == 0, made.stderr
        pipeline.start("frontier")
        pipeline.start("extractor")
        pipeline.start("fetcher", env={"SHOP_PASSWORD": PASSWORD})

        gated = (site.spec.origin(CONSENT) + "/", site.spec.origin(LOGIN) + "/")
        truths = {canonicalize(p.url): p for p in site.truth().products if p.url.startswith(gated)}
        probe = JobProbe(settings)
        probe.submit(JobSpec(job_id="sessions", allowed_domains=(consent, login)), sorted(truths))
        probe.wait_finished("sessions", timeout_s=240)
        found = records(settings, "sessions", set(truths), pipeline)
        posts = [(entry.host, entry.path) for entry in site.log() if entry.method == "POST"]

    assert sorted(posts) == [(CONSENT, "/consent"), (LOGIN, "/login")]
    for url, truth in truths.items():
        product = found[url].product
        assert product is not None, url
        assert (product.price, product.currency) == (Decimal(truth.price), truth.currency), url
    whole_logs = "".join(log.read_text() for log in pipeline.tmp_path.glob("*.log"))
    assert whole_logs and PASSWORD not in whole_logs
