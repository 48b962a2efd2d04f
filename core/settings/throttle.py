"""Settings of adaptive throttling: the policy's tuning (its only defaults) and the processor's knobs.

Every rule about these values lives here, so a bad ``DUALPLANE_THROTTLE_*`` value is refused when
the settings are read, naming the variable; the policy (``data_plane.throttle.policy``) is built
from this section and never second-guesses it.
"""

from __future__ import annotations

import difflib
import os
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from dualplane.core.settings import checks
from dualplane.core.settings.base import ENV_PREFIX, Section, section

# Outcomes (``control_plane.fetcher.retry_policy.Outcome``'s values, which core cannot import) that
# say "too fast", not "go away".
_RATE_LIMIT_OUTCOMES = frozenset({"rate_limited", "blocked_challenge"})


class ThrottleSettings(Section):
    """The throttle processor (``data_plane.throttle``) and the politeness tuning shared with fetchers.

    Windows, policy tuning (``data_plane.throttle.policy.PolicyConfig.from_settings``) and the
    processor's own knobs; durations in seconds unless named. Fields left ``None`` take a default
    from other sections (see :attr:`Settings.throttle_app_id` and friends). An unknown
    ``DUALPLANE_THROTTLE_*`` variable is an error, so a typo never silently falls back to a default.
    """

    model_config = section("THROTTLE_")

    # The slow layer, the fleet's memory of a domain: the seed's "block rate > 5% over the last
    # 10 minutes, halve P_d", hot or not, the pause. With the fast layer off, it judges everything.
    window_size_s: int = Field(default=600, ge=1)
    window_step_s: int = Field(default=60, ge=1)
    threshold: float = Field(default=0.05, gt=0, lt=1)  # block ratio above which a domain is halved
    min_samples: int = Field(default=20, ge=1)
    # The fast layer (seconds): backoff to what the site let through, nudges, probes and climbs are
    # judged on a window this short, so a fresh domain that blocks comes down within a few seconds
    # and is back within about a minute once the site relaxes. 0 (or not shorter than
    # window_size_s): no fast layer, the one window judges everything.
    fast_window_s: int = Field(default=6, ge=0)
    fast_step_s: int = Field(default=1, ge=1)
    fast_min_samples: int = Field(default=5, ge=1)
    # The fast layer's climbs (every recovery_s toward a known limit; probes onto it wait recovery_s
    # times 2^failed, at most 2^probe_backoff_max): seconds, so a relaxed site is seen within a
    # minute. 180 s and 2^4 held a fresh domain at a fraction of its limit for minutes (issue 33).
    recovery_min_samples: int = Field(default=3, ge=1)
    recover_fraction: float = Field(default=0.5, gt=0, le=1)
    recovery_s: float = Field(default=4.0, ge=0)
    ceiling: int | None = Field(default=None, ge=1)  # None: DUALPLANE_LIMIT_DOMAIN_CONCURRENCY
    base_delay_ms: int | None = Field(default=None, ge=0)  # None: DUALPLANE_LIMIT_DOMAIN_DELAY_MS
    # Also what a fetcher holds a domain back for after a 403 (no Retry-After), and the cap of any
    # local cooldown, Retry-After included.
    cooldown_base_ms: int = Field(default=2000, ge=1)
    # What a fetcher holds a domain back for after a challenge page or a 429 without Retry-After:
    # shorter, since at the limit most of those are a probe one request too far (2 s idled a
    # domain held at R = 20 for 40 requests per failed probe); a 403 burst keeps the longer base.
    cooldown_challenge_ms: int = Field(default=1000, ge=1)
    cooldown_cap_ms: int = Field(default=300_000, ge=1)
    jitter: float = Field(default=0.25, ge=0, lt=1)
    pause_ratio: float = Field(default=0.5, gt=0, le=1)  # above threshold: checked below
    pause_windows: int = Field(default=2, ge=1)
    pause_s: int = Field(default=600, ge=1)
    daily_budget: int = Field(default=0, ge=0)  # requests per UTC day over the worker's domains; 0: none
    # Scraping-API credits per UTC day over the worker's domains (what the API charged, from each
    # fetch event); spent: every domain pauses until the day ends or an operator clears '*'. 0: none.
    # When set, the budget rule (low-priority domains at concurrency 1 past budget_fraction) counts
    # credits instead of requests.
    daily_credits: int = Field(default=0, ge=0)
    budget_fraction: float = Field(default=0.8, gt=0, le=1)
    probe_backoff_max: int = Field(default=2, ge=0, le=16)  # probe waits up to recovery_s * 2^this
    # Latency as a signal (Scrapy's AutoThrottle): a window this many times slower than the domain's
    # own baseline, and at least latency_min_ms slower, cuts its rate by a quarter. 0: off.
    latency_factor: float = Field(default=3.0, ge=0)
    latency_min_ms: float = Field(default=200.0, ge=0)
    # The scraping API's credits used up: every domain pauses this long (or until cleared), then
    # the first fetch tells whether the budget is back.
    quota_pause_s: int = Field(default=600, ge=1)
    low_priority_domains: str = ""  # comma-separated; a domain and its subdomains
    max_lag_s: float = Field(default=600.0, gt=0)  # older events are counted but never acted on
    app_id: str | None = None  # None: <DUALPLANE_KAFKA_GROUP_PREFIX>-throttle
    offset_reset: Literal["latest", "earliest"] = "latest"  # where a new group starts in fetch.events
    # A crashed worker's partitions move after this long; Faust's 60 s default would stall reactions.
    session_timeout_s: float = Field(default=10.0, ge=6, le=300)  # the broker's default bounds
    commit_interval_s: float = Field(default=1.0, gt=0)  # what a crash makes Faust redeliver
    # None: <DUALPLANE_STACK_DATA_DIR>/throttle/snapshot.json; empty: no snapshot.
    snapshot_path: str | None = None
    snapshot_interval_s: float = Field(default=1.0, gt=0)
    web_port: int = Field(default=0, ge=0, lt=65536)  # 0: no web server; else GET /throttle/...
    web_bind: str = "127.0.0.1"

    @field_validator("web_bind")
    @classmethod
    def _an_address(cls, value: str) -> str:
        return checks.host(value)

    @field_validator("app_id")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        return checks.name(value) if value else value  # unset or empty: from the group prefix

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_variables(cls, data: Any) -> Any:
        prefix = f"{ENV_PREFIX}THROTTLE_"
        known = {f"{prefix}{name.upper()}" for name in cls.model_fields}
        unknown = sorted(
            key for key in os.environ if key.upper().startswith(prefix) and key.upper() not in known
        )
        if unknown:
            guesses = [
                f"{name} (did you mean {close[0]}?)" if close else name
                for name in unknown
                for close in [difflib.get_close_matches(name.upper(), known, n=1)]
            ]
            raise ValueError(
                f"unknown variable(s) {', '.join(guesses)}; `dualplane config show` lists the known ones"
            )
        return data

    @model_validator(mode="after")
    def _consistent(self) -> ThrottleSettings:
        problems = [
            text
            for failed, text in (
                (
                    self.window_size_s < self.window_step_s or self.window_size_s % self.window_step_s != 0,
                    "DUALPLANE_THROTTLE_WINDOW_SIZE_S must be a multiple of DUALPLANE_THROTTLE_WINDOW_STEP_S "
                    f"(hopping windows), got {self.window_size_s} and {self.window_step_s}",
                ),
                (
                    self.fast_window_s % self.fast_step_s != 0,
                    "DUALPLANE_THROTTLE_FAST_WINDOW_S must be a multiple of DUALPLANE_THROTTLE_FAST_STEP_S, "
                    f"got {self.fast_window_s} and {self.fast_step_s}",
                ),
                (
                    self.pause_ratio <= self.threshold,
                    f"DUALPLANE_THROTTLE_PAUSE_RATIO ({self.pause_ratio}) must be above "
                    f"DUALPLANE_THROTTLE_THRESHOLD ({self.threshold})",
                ),
                (
                    self.cooldown_cap_ms < self.cooldown_base_ms,
                    f"DUALPLANE_THROTTLE_COOLDOWN_CAP_MS ({self.cooldown_cap_ms}) must be at least "
                    f"DUALPLANE_THROTTLE_COOLDOWN_BASE_MS ({self.cooldown_base_ms})",
                ),
                (
                    self.cooldown_cap_ms < self.cooldown_challenge_ms,
                    f"DUALPLANE_THROTTLE_COOLDOWN_CAP_MS ({self.cooldown_cap_ms}) must be at least "
                    f"DUALPLANE_THROTTLE_COOLDOWN_CHALLENGE_MS ({self.cooldown_challenge_ms})",
                ),
            )
            if failed
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def cooldown_without_retry_after_ms(self, outcome: str) -> int:
        """A fetcher's cooldown after ``outcome`` when the site gave no Retry-After: the one owner of
        the per-outcome choice (the fetcher and the throttle simulator both ask here). A challenge
        page or a 429 (``blocked_challenge``, ``rate_limited``) is the site's rate limit,
        ``cooldown_challenge_ms``; anything else (a 403) may be a block, ``cooldown_base_ms``."""
        return self.cooldown_challenge_ms if outcome in _RATE_LIMIT_OUTCOMES else self.cooldown_base_ms

    @property
    def fast_layer(self) -> bool:
        """Whether a fast window is judged besides the 10-minute one: set, and shorter than it (a
        window tuned down to seconds is a single layer, as before the fast one existed)."""
        return 0 < self.fast_window_s < self.window_size_s

    @property
    def low_priority(self) -> tuple[str, ...]:
        """``low_priority_domains`` parsed: lowercase, blanks dropped."""
        return tuple(d.strip().lower() for d in self.low_priority_domains.split(",") if d.strip())
