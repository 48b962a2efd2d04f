"""Quota as a signal: a scraping API whose credits are used up pauses every domain, fleet-wide.

A fetch through the managed scraping API that comes back "credits used up" (its 403, outcome
``quota_exhausted``) says nothing about the site and everything about the account: every other task
would get the same answer. The fetcher defers that task without spending an attempt
(``control_plane.fetcher.retry_policy``); the processor, on the first such event, issues one
command for :data:`ALL_DOMAINS` (source ``quota``, paused, ``ttl_s = DUALPLANE_THROTTLE_QUOTA_PAUSE_S``).
Every fetcher's and the frontier's :class:`~data_plane.throttle.limits.LimitsBook` applies it to
every domain, so the lanes are left alone: no retries burned, no dead letters.

It ends when the budget resets (the pause runs out; the first fetch after it tells whether the
credits are back, and a new pause follows if not) or when an operator raised the budget and clears
it (``data_plane.throttle.overrides.clearing(settings, "*", ...)``, what ``dualplane throttle clear``
sends): a newer command for ``*`` replaces the pause.
"""

from __future__ import annotations

from datetime import datetime

from dualplane.core.clock import utc_now
from dualplane.core.settings import LimitSettings
from dualplane.data_plane.throttle.commands import ALL_DOMAINS, ThrottleCommand
from dualplane.data_plane.throttle.events import FetchSample

QUOTA = "quota"  # the source of the fleet-wide pause


def quota_pause(
    sample: FetchSample, pause_s: int, limits: LimitSettings, issued_at: datetime | None = None
) -> ThrottleCommand:
    """The command pausing every domain after ``sample`` found the API's credits used up."""
    reason = (
        f"quota: the scraping API refused a fetch of {sample.domain} for the account (credits used up "
        f"or key refused); every domain paused for {pause_s} s or until an operator clears '*'"
    )
    return fleet_pause(reason, pause_s, limits, issued_at or utc_now())


def fleet_pause(reason: str, ttl_s: int, limits: LimitSettings, issued_at: datetime) -> ThrottleCommand:
    """One command pausing every domain for ``ttl_s`` (source ``quota``): the account, not a site, is
    out of credits, whether the API said so or our own daily budget did (``credits``)."""
    return ThrottleCommand(
        domain=ALL_DOMAINS,
        concurrency=limits.domain_concurrency,
        delay_ms=limits.domain_delay_ms,
        paused=True,
        reason=reason,
        issued_at=issued_at,
        source=QUOTA,
        ttl_s=ttl_s,
    )
