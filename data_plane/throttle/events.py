"""Reading ``fetch.events`` values into the few facts the block-ratio windows count."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dualplane import schemas
from dualplane.data_plane.throttle.exceptions import BadFetchEvent
from dualplane.schemas.exceptions import SchemaError

FETCH_EVENT = "fetch_event"
# What the anti-bot defences of a site look like from the fetcher: these count toward the block ratio.
BLOCKED_OUTCOMES = frozenset({"rate_limited", "forbidden", "blocked_challenge"})
TIMEOUT_OUTCOMES = frozenset({"timeout"})
SERVER_ERROR_OUTCOMES = frozenset({"server_error"})
RESET_OUTCOMES = frozenset({"connection_error"})
QUOTA_OUTCOMES = frozenset({"quota_exhausted"})  # the scraping API's account, not the site
OVERLOADED_STATUS = 503  # "come back later": as much a pushback as a 429


@dataclass(frozen=True)
class FetchSample:
    """One fetch attempt as the windows see it."""

    domain: str
    outcome: str
    fetched_at_s: float  # event time: when the attempt ended, epoch seconds
    latency_ms: int
    retry_after_s: float | None
    status: int | None = None
    api_credits: float = 0.0  # what the scraping API charged for the attempt (0: direct, or v1/v2 data)

    @property
    def blocked(self) -> bool:
        return self.outcome in BLOCKED_OUTCOMES

    @property
    def timed_out(self) -> bool:
        return self.outcome in TIMEOUT_OUTCOMES

    @property
    def server_error(self) -> bool:
        return self.outcome in SERVER_ERROR_OUTCOMES

    @property
    def overloaded(self) -> bool:
        return self.server_error and self.status == OVERLOADED_STATUS

    @property
    def quota_exhausted(self) -> bool:
        return self.outcome in QUOTA_OUTCOMES

    @property
    def reset(self) -> bool:
        """The connection failed (refused, reset, TLS): what a site that drops traffic looks like."""
        return self.outcome in RESET_OUTCOMES


def parse_fetch_event(value: Any) -> FetchSample:
    """The sample in a raw ``fetch.events`` value; :class:`BadFetchEvent` says why there is none."""
    if not isinstance(value, bytes):
        raise BadFetchEvent(f"expected Avro bytes, got {type(value).__name__}")
    return _parse(value)


def _parse(value: bytes) -> FetchSample:
    try:
        decoded = schemas.decode(value)
    except SchemaError as error:
        raise BadFetchEvent(f"undecodable fetch event: {error}") from error
    if decoded.name != FETCH_EVENT:
        raise BadFetchEvent(f"a {decoded.name!r} record on the fetch-events topic; expected {FETCH_EVENT!r}")
    record = decoded.record
    fetched_at = record["fetched_at"]
    if not record["domain"] or not isinstance(fetched_at, datetime):
        raise BadFetchEvent(f"fetch event without a domain or a fetched_at time: {record!r:.200}")
    retry_after = record.get("retry_after_s")
    return FetchSample(
        domain=str(record["domain"]).lower(),
        outcome=str(record["outcome"]),
        fetched_at_s=fetched_at.timestamp(),
        latency_ms=max(0, int(record["latency_ms"])),
        retry_after_s=float(retry_after) if retry_after is not None and retry_after > 0 else None,
        status=int(record["status"]) if record.get("status") is not None else None,
        api_credits=max(0.0, float(record.get("api_credits") or 0.0)),
    )
