"""The throttle feedback loop end to end: an anti-bot site, the real fleet and processor, the site's figures.

At the shipped ``DUALPLANE_THROTTLE_*`` defaults (10-minute windows with the 6 s fast layer), P_d 8
and delay 0, a fresh domain: against a host that answers a captcha page beyond R = 5 requests/s, the
site must see its request rate fall below R and blocks stay rare; once it relaxes, P_d must climb
back to the ceiling. The whole time series is printed (``pytest -s`` shows it; a failure always does).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dualplane.namespaces import drop_namespace
from tests.support.anti_bot_loop import LoopResult, LoopSpec, Sample, loop_settings, run_loop
from tests.support.brokers import BrokerSession

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _print(sample: Sample) -> None:
    print(sample.line(), flush=True)


@pytest.mark.timeout(480)
def test_the_fleet_backs_off_below_the_sites_limit_and_climbs_back_when_it_relaxes(
    brokers: BrokerSession, tmp_path: Path
) -> None:
    spec = LoopSpec()
    settings = loop_settings(brokers.settings, spec, tmp_path)
    try:
        result: LoopResult = run_loop(settings, spec, tmp_path, on_sample=_print)
    finally:
        drop_namespace(settings)
    figures = result.summary()
    print(figures)
    blocking = result.phase("blocking")
    settled = result.settled()
    settled_requests = sum(s.requests for s in settled)
    settled_blocked = sum(s.blocked for s in settled)

    # Unthrottled, the fleet overran the site, by the site's own count: it needed the loop. Not "in
    # the first 10 s": on a loaded machine the fleet ramps up slower (4 req/s at most in the first
    # 10 s of one CI run, then blocked at 6 req/s), and what matters is that the blocks came first.
    assert sum(s.blocked for s in result.unthrottled()) > 0, figures
    assert min(s.concurrency for s in blocking) < spec.ceiling, figures
    # Settled: below the site's limit, and blocks rare, by the site's own count. Not "below the
    # threshold": that is the policy's set point, and each probe upward (which is how the fleet finds
    # out that a site relaxed) costs a few blocks before it is undone. The settled half holds up to
    # two probes (their waits double: 8, 16, 32 s) over 60-120 requests, so the share sits at the
    # threshold (3 of 60 and 4 of 61 failed runs on a loaded machine). Twice the threshold still
    # fails a fleet that is not held back: unthrottled, half the requests are blocked.
    assert settled_requests / len(settled) < spec.max_rps, figures
    assert settled_blocked / max(1, settled_requests) < 2 * spec.threshold, figures
    assert settled_requests > 0, "the fleet stopped crawling instead of slowing down"
    # Relaxed: back to the ceiling, and faster than under the block (the crawl may end before the
    # run does, so over the whole relaxed phase).
    relaxed = result.phase("relaxed")
    assert relaxed[-1].concurrency == spec.ceiling, figures
    assert figures["recovered_s"] is not None and figures["recovered_s"] <= 60, figures
    assert sum(s.requests for s in relaxed) / len(relaxed) > spec.max_rps, figures
