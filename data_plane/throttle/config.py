"""The throttle processor's configuration, read from ``DUALPLANE_THROTTLE_*`` environment variables.

Every field ``name`` is read from ``DUALPLANE_THROTTLE_<NAME>`` (``window_size_s`` from
``DUALPLANE_THROTTLE_WINDOW_SIZE_S``); an unknown ``DUALPLANE_THROTTLE_*`` variable is an error, so a
typo never silently falls back to a default. Defaults that depend on the rest of the settings (the
P_d ceiling, the base delay, the app id, the snapshot path) come from :class:`~dualplane.settings.Settings`.
Lists are comma-separated. An empty ``DUALPLANE_THROTTLE_SNAPSHOT_PATH`` turns the snapshot off.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from control_plane.throttle_policy import PolicyConfig, Priority
from data_plane.throttle.exceptions import InvalidThrottleConfig
from dualplane.settings import ENV_PREFIX, Settings

PREFIX = f"{ENV_PREFIX}THROTTLE_"
OffsetReset = Literal["latest", "earliest"]


@dataclass(frozen=True)
class ThrottleConfig:
    """Windows, policy tuning and the processor's own knobs; durations in seconds unless named."""

    window_size_s: int = 600
    window_step_s: int = 60
    threshold: float = 0.05
    min_samples: int = 20
    recovery_min_samples: int = 5
    recover_fraction: float = 0.5
    recovery_s: float = 180.0
    ceiling: int = 2  # default: DUALPLANE_LIMIT_DOMAIN_CONCURRENCY
    base_delay_ms: int = 1000  # default: DUALPLANE_LIMIT_DOMAIN_DELAY_MS
    cooldown_base_ms: int = 2000
    cooldown_cap_ms: int = 300_000
    jitter: float = 0.25
    pause_ratio: float = 0.5
    pause_windows: int = 2
    pause_s: int = 600
    daily_budget: int = 0  # requests per UTC day over the domains this worker owns; 0: no budget
    budget_fraction: float = 0.8
    low_priority_domains: tuple[str, ...] = ()  # a domain and its subdomains
    max_lag_s: float = 600.0  # older events are counted but never acted on (catching up a backlog)
    app_id: str = "dualplane-throttle"  # default: <DUALPLANE_KAFKA_GROUP_PREFIX>-throttle
    offset_reset: OffsetReset = "latest"  # where a new consumer group starts in fetch.events
    # A crashed worker's partitions move after this long; Faust's 60 s default would stall reactions.
    session_timeout_s: float = 10.0
    commit_interval_s: float = 1.0  # how much a crash makes Faust redeliver (windows skip what they counted)
    snapshot_path: Path | None = None  # default: <DUALPLANE_STACK_DATA_DIR>/throttle/snapshot.json
    snapshot_interval_s: float = 1.0
    web_port: int = 0  # 0: no web server; else GET /throttle/ and /throttle/{domain}/
    web_bind: str = "127.0.0.1"

    def __post_init__(self) -> None:
        problems = []
        if self.window_step_s < 1 or self.window_size_s < self.window_step_s:
            problems.append("WINDOW_STEP_S must be >= 1 and WINDOW_SIZE_S >= WINDOW_STEP_S")
        elif self.window_size_s % self.window_step_s:
            problems.append("WINDOW_SIZE_S must be a multiple of WINDOW_STEP_S (hopping windows)")
        if (
            self.daily_budget < 0
            or min(self.max_lag_s, self.snapshot_interval_s, self.commit_interval_s) <= 0
        ):
            problems.append(
                "DAILY_BUDGET must be >= 0; MAX_LAG_S, SNAPSHOT_INTERVAL_S, COMMIT_INTERVAL_S > 0"
            )
        if not 6 <= self.session_timeout_s <= 300:
            problems.append("SESSION_TIMEOUT_S must be within the broker's default 6..300 s")
        if not 0 <= self.web_port < 65536:
            problems.append(f"WEB_PORT must be a TCP port or 0, got {self.web_port}")
        if problems:
            raise InvalidThrottleConfig(f"invalid {PREFIX}* configuration: {'; '.join(problems)}")
        try:
            self.policy()
        except ValueError as error:
            raise InvalidThrottleConfig(f"invalid {PREFIX}* configuration: {error}") from error

    @classmethod
    def from_env(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> ThrottleConfig:
        """Read ``DUALPLANE_THROTTLE_*`` from ``environ`` (default: the process environment)."""
        environ = os.environ if environ is None else environ
        hints = typing.get_type_hints(cls)
        names = {f"{PREFIX}{field.name.upper()}": field.name for field in dataclasses.fields(cls)}
        unknown = sorted(key for key in environ if key.startswith(PREFIX) and key not in names)
        if unknown:
            raise InvalidThrottleConfig(
                f"unknown variable(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}"
            )
        values: dict[str, Any] = {
            "ceiling": settings.limits.domain_concurrency,
            "base_delay_ms": settings.limits.domain_delay_ms,
            "app_id": f"{settings.kafka.group_prefix}-throttle",
            "snapshot_path": settings.stack.data_dir / "throttle" / "snapshot.json",
        }
        for env_name, name in names.items():
            if env_name in environ:
                values[name] = _parse(env_name, environ[env_name], hints[name])
        return cls(**values)

    def policy(self) -> PolicyConfig:
        """The policy's view of this configuration."""
        return PolicyConfig(
            step_s=float(self.window_step_s),
            threshold=self.threshold,
            min_samples=self.min_samples,
            recovery_min_samples=self.recovery_min_samples,
            recover_fraction=self.recover_fraction,
            recovery_s=self.recovery_s,
            ceiling=self.ceiling,
            base_delay_ms=self.base_delay_ms,
            cooldown_base_ms=self.cooldown_base_ms,
            cooldown_cap_ms=self.cooldown_cap_ms,
            jitter=self.jitter,
            pause_ratio=self.pause_ratio,
            pause_windows=self.pause_windows,
            pause_s=self.pause_s,
            budget_fraction=self.budget_fraction,
        )

    def priority(self, domain: str) -> Priority:
        """``low`` for a listed low-priority domain or any of its subdomains."""
        for listed in self.low_priority_domains:
            if domain == listed or domain.endswith(f".{listed}"):
                return "low"
        return "normal"

    def to_env(self) -> dict[str, str]:
        """This configuration as ``DUALPLANE_THROTTLE_*`` variables, to hand to a worker process."""
        env = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            text = "" if value is None else ",".join(value) if isinstance(value, tuple) else str(value)
            env[f"{PREFIX}{field.name.upper()}"] = text
        return env


def _parse(env_name: str, raw: str, hint: Any) -> Any:
    text = raw.strip()
    try:
        if hint is int:
            return int(text)
        if hint is float:
            return float(text)
        if hint == tuple[str, ...]:
            return tuple(item.strip().lower() for item in text.split(",") if item.strip())
        if hint == Path | None:
            return Path(text).expanduser() if text else None
        if typing.get_origin(hint) is Literal:
            if text not in typing.get_args(hint):
                raise ValueError(f"choose one of {', '.join(typing.get_args(hint))}")
            return text
        return text
    except ValueError as error:
        raise InvalidThrottleConfig(f"{env_name}={raw!r} is not valid: {error}") from error
