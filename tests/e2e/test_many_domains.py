"""Many domains at once (issue #33): 45 healthy hosts are not slowed while 5 blocking ones are held
near their own limits (captcha with status 200 above 2, 2, 5, 5 and 20 requests/s).

The real frontier, a fetcher and the Faust processor, at the shipped defaults but P_d 8 and delay
0 (so that the sites' limits bind), on a fresh namespace (see :mod:`tests.support.many_domains`).
A fleet with capacity to spare, as the issue means it: the blocking hosts get their pages at
once, the healthy ones a page each every 4 s (11 requests/s in all; one fetcher here does ~75), so
what a healthy host should get is what it offers, blockers or not. Saturated instead, every domain
gets the same share of the one lane whatever its site allows (docs/throttle.md, "Many domains").

Judged from 30 s on by the sites' own counts, with margins for a loaded machine: each blocking
host at 40-100% of its limit (78-88% measured at load 8-45; 2-32% when the healthy hosts' work
filled the fetcher), at least 60% on average over the five, and blocks rare; each healthy host at
least 70% of what it offered (96% measured), 85% over all of them. The series are printed.

**In CI** since the paced slots (``control_plane/frontier/slots.py``): the case needs a fleet with
~45 requests/s to spare, which CI's machine has when the suite runs alone (one pytest process).
Beside other sessions' work unpinned (load 9-18) it passed 3 runs of 3 (lowest host 63%, mean at
least 73%, 122-164 s). Held to a third of one core (pinned beside two busy loops) it passed twice
and failed once when other work came back (load 8 -> 18: the fleet did ~16 requests/s in all, the
blocking hosts got 9-26% of their limits): a failure here on a starved machine is the machine's
capacity, not the throttle's decisions; the printed series say which.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from dualplane.namespaces import drop_namespace
from tests.support.brokers import BrokerSession
from tests.support.many_domains import HostSeries, many_settings, run_many

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DURATION_S = 75
SETTLE_S = 30  # the first backoffs and their echoes come in the first 5-15 s
HEALTHY_EVERY_S = 4.0


def _lines(series: list[HostSeries]) -> str:
    return "\n".join(
        f"{row.url} R={row.max_rps} requests/s {row.requests} blocked {row.blocked} "
        f"P_d {[c for c, _, _ in row.limits]}"
        for row in series
    )


@pytest.mark.timeout(420)
def test_each_blocking_host_settles_near_its_limit_and_the_healthy_ones_get_what_they_offer(
    brokers: BrokerSession, tmp_path: Path
) -> None:
    settings = many_settings(brokers.settings, tmp_path)
    try:
        series = run_many(settings, duration_s=DURATION_S, healthy_every_s=HEALTHY_EVERY_S)
    finally:
        drop_namespace(settings)
    blocking = [row for row in series if row.max_rps]
    healthy = [row for row in series if not row.max_rps]
    summaries = [row.summary(SETTLE_S, DURATION_S) for row in series]
    figures = "\n".join(str(summary) for summary in summaries)
    print(figures, _lines(blocking), sep="\n")

    # The sites' limits bound: every blocking host was blocked unthrottled, and the processor
    # throttled it (P_d 8 at 20 ms pages sends ~25 requests in the first second).
    assert all(sum(row.blocked) > 0 for row in blocking), figures
    assert all(row.summary(0, DURATION_S)["throttled"] for row in blocking), figures
    # Each settles near its own limit: the single-domain loop holds 80-88% (medians); 40% is far
    # above what a starved host got (8-32%), and under 100% means the fleet is not pushing through
    # blocks (the site counts blocked requests too).
    fractions = [row.held(SETTLE_S, DURATION_S) / row.max_rps for row in blocking if row.max_rps]
    assert all(0.4 <= fraction <= 1.0 for fraction in fractions), figures
    assert statistics.mean(fractions) >= 0.6, figures
    settled_requests = sum(sum(row.requests[SETTLE_S:]) for row in blocking)
    settled_blocked = sum(sum(row.blocked[SETTLE_S:]) for row in blocking)
    # A failed probe costs one or two blocks every 16-32 s per host: ~2-4% at R = 2.
    assert settled_blocked / max(1, settled_requests) < 0.1, figures

    # The healthy hosts are not slowed: each gets the pages it offers, as they come.
    offered = (DURATION_S - SETTLE_S) / HEALTHY_EVERY_S
    got = [sum(row.requests[SETTLE_S:DURATION_S]) for row in healthy]
    assert min(got) >= 0.7 * offered, (got, figures)
    assert sum(got) >= 0.85 * offered * len(healthy), (got, figures)
    assert not any(sum(row.blocked) for row in healthy), figures
