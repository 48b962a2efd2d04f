"""The retry policy: one table from fetch outcome to retry, give up or dead-letter, with backoff."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

JITTER_MIN = 0.5
"""Lower bound of the jitter factor; the upper bound is 1.0 (see :func:`decide`)."""


class Outcome(StrEnum):
    """How one fetch ended, as classified by the fetcher (404 and 410 are both ``not_found``)."""

    OK = "ok"
    NOT_MODIFIED = "not_modified"  # 304 to a conditional GET: the page is as it was, no body came
    REDIRECT = "redirect"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    FORBIDDEN = "forbidden"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    TOO_LARGE = "too_large"
    ROBOTS_DISALLOWED = "robots_disallowed"
    BLOCKED_CHALLENGE = "blocked_challenge"
    PARSE_ERROR = "parse_error"
    INVALID_CONTENT = "invalid_content"
    SSRF_REFUSED = "ssrf_refused"
    PERMIT_QUEUE_MISSING = "permit_queue_missing"  # brokers.amqp.permits.MISSING: nothing was fetched
    # The managed scraping API's credits are used up (or its key refused): nothing can be fetched
    # through it, whatever the task. The throttle pauses every domain on the first one.
    QUOTA_EXHAUSTED = "quota_exhausted"
    API_BUSY = "api_busy"  # the scraping API's plan runs all the requests it allows at once


@dataclass(frozen=True)
class DelayTiers:
    """The retry delay queues, shortest first, as name -> delay (the queue's TTL too).

    A retried task waits in exactly one tier, so its real delay is that tier's: the retry relay
    (``brokers.amqp.retry_relay``) hands it back to its lane when due.
    """

    tiers: tuple[tuple[str, int], ...] = (("5s", 5000), ("30s", 30000), ("2m", 120000), ("10m", 600000))

    def __post_init__(self) -> None:
        ttls_ms = [ttl_ms for _, ttl_ms in self.tiers]
        if not ttls_ms or ttls_ms != sorted(set(ttls_ms)) or ttls_ms[0] <= 0:
            raise ValueError(f"delay tiers must be non-empty with increasing positive TTLs: {self.tiers}")
        if len(set(self.names)) != len(self.tiers):
            raise ValueError(f"delay tier names must be unique: {self.names}")

    @property
    def names(self) -> tuple[str, ...]:
        """Tier names, shortest TTL first (e.g. for declaring one queue per tier)."""
        return tuple(name for name, _ in self.tiers)

    @property
    def max_delay_s(self) -> float:
        """The largest tier's TTL: the cap of every backoff."""
        return self.tiers[-1][1] / 1000

    def ttl_ms(self, name: str) -> int:
        """The TTL of tier ``name``; ``KeyError`` for an unknown name."""
        return dict(self.tiers)[name]

    def tier_for(self, delay_s: float) -> str:
        """The smallest tier whose TTL is >= ``delay_s``, else the largest tier."""
        for name, ttl_ms in self.tiers:
            if ttl_ms >= delay_s * 1000:
                return name
        return self.tiers[-1][0]


DEFAULT_TIERS = DelayTiers()


@dataclass(frozen=True)
class RetryRule:
    """One row of the policy: what to do after an outcome, and why."""

    retry: bool
    base_delay_s: float
    cool_down_domain: bool
    why: str
    min_delay_s: float = 0.0
    """Floor of every delay; a 2-minute floor keeps blocked domains out of the short tiers."""
    success: bool = False
    attempt: bool = True
    """False: the failure is the fetch backend's, not the task's; the task goes round the delay
    tier unchanged (``defer``), its attempts are not spent and it is never dead-lettered."""


# fmt: off
RULES: Mapping[Outcome, RetryRule] = MappingProxyType({
    #                          RetryRule(retry, base_delay_s, cool_down_domain, why, ...)
    Outcome.OK:                RetryRule(False,   0, False, "fetched", success=True),
    Outcome.NOT_MODIFIED:      RetryRule(False,   0, False, "unchanged since the last visit", success=True),
    Outcome.REDIRECT:          RetryRule(False,   0, False, "the target is queued as a URL", success=True),
    Outcome.TIMEOUT:           RetryRule(True,    5, False, "transient: the server or network was slow"),
    Outcome.CONNECTION_ERROR:  RetryRule(True,    5, False, "transient: DNS, TCP or TLS failed"),
    Outcome.SERVER_ERROR:      RetryRule(True,    5, False, "transient: 500/502/503/504"),
    Outcome.RATE_LIMITED:      RetryRule(True,   30, True,  "429: slow the domain down, honour Retry-After"),
    Outcome.FORBIDDEN:         RetryRule(True,  120, True,  "403: maybe a temporary block", min_delay_s=120),
    Outcome.BLOCKED_CHALLENGE: RetryRule(True,  120, True,  "bot challenge: back off hard", min_delay_s=120),
    Outcome.NOT_FOUND:         RetryRule(False,   0, False, "404/410: the page is gone"),
    Outcome.ROBOTS_DISALLOWED: RetryRule(False,   0, False, "robots.txt forbids it"),
    Outcome.SSRF_REFUSED:      RetryRule(False,   0, False, "private or metadata address: never fetched"),
    Outcome.PARSE_ERROR:       RetryRule(False,   0, False, "the same bytes would fail again"),
    Outcome.TOO_LARGE:         RetryRule(False,   0, False, "over the page size limit"),
    Outcome.INVALID_CONTENT:   RetryRule(False,   0, False, "not content we extract"),
    Outcome.PERMIT_QUEUE_MISSING: RetryRule(True, 5, False, "the domain's permit queue was gone: "
                                            "the frontier declares it again when the retry is reported"),
    Outcome.QUOTA_EXHAUSTED:   RetryRule(True,    1, False, "the scraping API's credits are used up: "
                                         "waits for the budget, not an attempt", attempt=False),
    Outcome.API_BUSY:          RetryRule(True,    1, False, "the scraping API's plan is at its concurrency: "
                                         "not an attempt", attempt=False),
})
# fmt: on


def is_success(outcome: str) -> bool:
    """Whether a fetch event's ``outcome`` is a page fetched as asked (200, 304 on a revisit, a
    redirect queued as a URL): the one answer the fetcher, the report and status share."""
    try:
        return RULES[Outcome(outcome)].success
    except ValueError:  # an outcome newer than this code: not known to be a success
        return False


@dataclass(frozen=True)
class RetryDecision:
    """What the fetcher does with a task after one attempt.

    - ``done``: success; ack the task.
    - ``retry``: republish to delay tier ``tier`` (the task really waits that tier's TTL, which is
      >= ``delay_s``); ack the original after the republish is confirmed.
    - ``give_up``: a failure retrying cannot fix; record it, ack, do not retry.
    - ``dead_letter``: a retryable failure that exhausted ``max_attempts``; send to dead letters.
    - ``defer``: not the task's failure (the fetch backend's quota); republish it unchanged to
      tier ``tier``: no attempt is spent, so it is never dead-lettered for it.

    ``cool_down_domain`` says the site pushed back (429, 403, a challenge), whatever the action:
    the fetcher that saw it leaves the domain alone for Retry-After or a cooldown and holds its
    permit that long (:mod:`control_plane.fetcher.politeness`), until the throttle processor, which
    counts the same outcomes in ``fetch.events``, slows the whole fleet down.
    """

    action: Literal["done", "retry", "give_up", "dead_letter", "defer"]
    delay_s: float
    tier: str | None
    cool_down_domain: bool
    reason: str


def decide(
    outcome: Outcome,
    *,
    attempt: int,
    max_attempts: int,
    retry_after_s: float | None = None,
    tiers: DelayTiers = DEFAULT_TIERS,
    rng: random.Random | None = None,
) -> RetryDecision:
    """Apply :data:`RULES` to the outcome of attempt number ``attempt`` (1-based) of ``max_attempts``.

    Backoff is ``min(cap, base * 2**(attempt-1))`` times a jitter factor drawn uniformly from
    [0.5, 1.0], with cap = the largest tier. Jitter spreads retries of a burst of failures (one
    domain going down) so they do not return in lockstep; keeping at least half the backoff means
    the delay still grows with every attempt and never collapses into a tight retry. The result is
    raised to the rule's ``min_delay_s`` and, for ``rate_limited``, to ``retry_after_s`` (a server's
    instruction is not jittered), then capped so it always fits a tier.
    """
    if attempt < 1 or max_attempts < 1:
        raise ValueError(f"attempt and max_attempts must be >= 1, got {attempt} and {max_attempts}")
    rule = RULES[outcome]
    where = f"{outcome} on attempt {attempt}/{max_attempts}"
    if rule.success:
        return RetryDecision("done", 0.0, None, False, f"{where}: done ({rule.why})")
    if not rule.retry:
        return RetryDecision("give_up", 0.0, None, rule.cool_down_domain, f"{where}: not retried, {rule.why}")
    if not rule.attempt:
        tier = tiers.tier_for(rule.base_delay_s)
        return RetryDecision(
            "defer", rule.base_delay_s, tier, False, f"{outcome}: deferred via tier {tier}, {rule.why}"
        )
    if attempt >= max_attempts:
        return RetryDecision(
            "dead_letter", 0.0, None, rule.cool_down_domain, f"{where}: attempts exhausted ({rule.why})"
        )
    if outcome is not Outcome.RATE_LIMITED:
        retry_after_s = None  # only a 429 carries a Retry-After we act on
    delay_s, note = _delay_s(rule, attempt, retry_after_s, tiers, rng or random.Random())
    tier = tiers.tier_for(delay_s)
    reason = f"{where}: retry in ~{delay_s:.0f} s via tier {tier}{note}"
    return RetryDecision("retry", delay_s, tier, rule.cool_down_domain, reason)


def _delay_s(
    rule: RetryRule,
    attempt: int,
    retry_after_s: float | None,
    tiers: DelayTiers,
    rng: random.Random,
) -> tuple[float, str]:
    cap_s = tiers.max_delay_s
    backoff_s = min(cap_s, rule.base_delay_s * 2 ** (attempt - 1)) * rng.uniform(JITTER_MIN, 1.0)
    delay_s = max(backoff_s, rule.min_delay_s)
    note = ""
    if retry_after_s is not None:
        delay_s = max(delay_s, retry_after_s)
        if retry_after_s > cap_s:
            note = f" (Retry-After {retry_after_s:.0f} s capped at the largest tier, {cap_s:.0f} s)"
    return min(delay_s, cap_s), note
