"""The throttle command: JSON on the RabbitMQ throttle exchange, Avro ``throttle_command`` in Kafka.

One pydantic model mirrors the Avro schema field for field, so the two encodings always agree. On
the exchange the body is the usual control-message JSON (``{"kind": "throttle", "version": 1, ...}``);
in the compacted ``throttle.state`` topic the value is Avro and the key is :attr:`ThrottleCommand.state_key`:
the domain for the processor's commands, ``<domain>@operator`` for an operator override, so an
override never replaces the processor's state and the state is still there when the override expires.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, ValidationError, field_validator

from dualplane import schemas
from dualplane.brokers.amqp.messages import ControlMessage
from dualplane.core.clock import utc_now
from dualplane.data_plane.throttle.exceptions import BadThrottleCommand
from dualplane.data_plane.throttle.policy import Command
from dualplane.data_plane.throttle.rates import INT32_MAX
from dualplane.data_plane.throttle.signals import WindowCounts
from dualplane.schemas.exceptions import SchemaError

AVRO_NAME = "throttle_command"
AUTO = "auto"
OPERATOR = "operator"
ALL_DOMAINS = "*"  # a command for every domain at once: the scraping API's quota (data_plane.throttle.quota)


class ThrottleCommand(ControlMessage):
    """Per-domain limits: concurrency P_d, delay between requests, pause; see ``throttle_command.avsc``."""

    model_config = ConfigDict(frozen=True, extra="ignore")  # newer writers may add fields
    kind: ClassVar[str] = "throttle"

    domain: str = Field(min_length=1)
    concurrency: int = Field(ge=1, le=INT32_MAX)
    delay_ms: int = Field(ge=0, le=INT32_MAX)
    paused: bool = False
    reason: str = ""
    issued_at: datetime = Field(default_factory=utc_now, validate_default=True)
    source: str = AUTO
    ttl_s: int | None = Field(default=None, ge=0)
    blocked_ratio: float | None = None
    window_total: int | None = None
    window_blocked: int | None = None
    # The processor's view when it issued the command (schema v2): the rate it set the limits for
    # (None: unthrottled) and the site's limit as far as it knows, for `dualplane throttle show`.
    rate_rps: float | None = None
    limit_rps: float | None = None

    @field_validator("issued_at")
    @classmethod
    def _millisecond_utc(cls, value: datetime) -> datetime:
        """Avro keeps milliseconds: truncate here so the JSON and Avro forms of a command are equal."""
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).replace(microsecond=aware.microsecond // 1000 * 1000)

    @classmethod
    def from_policy(
        cls,
        domain: str,
        command: Command,
        counts: WindowCounts,
        issued_at: datetime | None = None,
        *,
        rate_rps: float | None = None,
        limit_rps: float | None = None,
    ) -> ThrottleCommand:
        """The processor's command for ``domain``, with the window that triggered it and the rate
        and limit it set."""
        return cls(
            domain=domain,
            concurrency=command.concurrency,
            delay_ms=command.delay_ms,
            paused=command.paused,
            reason=command.reason,
            issued_at=issued_at or utc_now(),
            source=AUTO,
            ttl_s=command.ttl_s,
            blocked_ratio=round(counts.blocked_ratio, 6),
            window_total=counts.total,
            window_blocked=counts.blocked,
            rate_rps=None if rate_rps is None else round(rate_rps, 4),
            limit_rps=None if limit_rps is None else round(limit_rps, 4),
        )

    @property
    def state_key(self) -> str:
        """Key in the compacted state topic: the domain, or ``<domain>@<source>`` for non-auto sources."""
        return self.domain if self.source == AUTO else f"{self.domain}@{self.source}"

    @property
    def expires_at(self) -> datetime | None:
        return None if self.ttl_s is None else self.issued_at + timedelta(seconds=self.ttl_s)

    def expired(self, now: datetime) -> bool:
        """True once ``ttl_s`` has passed since ``issued_at``; never for a command without ttl."""
        expires_at = self.expires_at
        return expires_at is not None and now >= expires_at

    def avro_record(self) -> dict[str, Any]:
        return self.model_dump(exclude={"version"})

    def to_avro(self) -> bytes:
        """Avro single-object encoding, the value written to the compacted state topic."""
        return schemas.encode(AVRO_NAME, self.avro_record())

    @classmethod
    def from_avro(cls, data: bytes) -> ThrottleCommand:
        """Decode a state-topic value; :class:`BadThrottleCommand` if it is not a throttle command."""
        try:
            decoded = schemas.decode(data)
        except SchemaError as error:
            raise BadThrottleCommand(f"state-topic value is not readable Avro: {error}") from error
        if decoded.name != AVRO_NAME:
            raise BadThrottleCommand(f"state-topic value is a {decoded.name!r}, not a {AVRO_NAME!r}")
        return cls._validate(decoded.record, "Avro")

    @classmethod
    def from_json(cls, body: bytes) -> ThrottleCommand:
        """Decode an exchange message body; :class:`BadThrottleCommand` says what is wrong with it."""
        try:
            fields = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise BadThrottleCommand(f"throttle message is not JSON ({error}): {body[:80]!r}") from error
        if not isinstance(fields, dict) or fields.get("kind") != cls.kind:
            kind = fields.get("kind") if isinstance(fields, dict) else type(fields).__name__
            raise BadThrottleCommand(f"expected a {cls.kind!r} message, got {kind!r}")
        if fields.get("version", 1) not in cls.versions:
            raise BadThrottleCommand(
                f"unknown throttle message version {fields.get('version')!r}; upgrade this listener"
            )
        fields.pop("kind")
        return cls._validate(fields, "JSON")

    @classmethod
    def _validate(cls, fields: dict[str, Any], encoding: str) -> ThrottleCommand:
        try:
            return cls.model_validate(fields)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
            raise BadThrottleCommand(f"invalid throttle command ({encoding}): {problems}") from error
