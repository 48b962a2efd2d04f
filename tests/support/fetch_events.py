"""Fetch events made up for driving the throttle processor without fetchers (tests and benchmarks)."""

from __future__ import annotations

import uuid
from datetime import datetime

from dualplane import schemas
from dualplane.data_plane.throttle.events import FETCH_EVENT

STATUS_OF_OUTCOME = {"ok": 200, "rate_limited": 429, "forbidden": 403}


def synthetic_fetch_event(
    domain: str,
    outcome: str,
    *,
    fetched_at: datetime,
    retry_after_s: float | None = None,
    api_credits: float = 0.0,
) -> bytes:
    """An Avro ``fetch_event`` as a fetcher would write it, for driving the processor without fetchers
    (its tests and benchmarks)."""
    return schemas.encode(
        FETCH_EVENT,
        {
            "job_id": "synthetic",
            "trace_id": uuid.uuid4().hex,
            "task_id": uuid.uuid4().hex,
            "url": f"https://{domain}/page",
            "final_url": None,
            "domain": domain,
            "outcome": outcome,
            "status": STATUS_OF_OUTCOME.get(outcome),
            "latency_ms": 50,
            "bytes": 2048,
            "attempt": 1,
            "fetched_at": fetched_at,
            "retry_after_s": retry_after_s,
            "api_credits": api_credits,
        },
    )
