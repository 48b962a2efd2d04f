"""Raw pages handed to the data plane exactly as the fetcher hands them over (its ``KafkaOutputs``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from dualplane.control_plane.fetcher.outputs import KafkaOutputs
from dualplane.core.settings import Settings


def fetch_event(page: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ok`` fetch event that goes with ``page``."""
    return {
        "job_id": page["job_id"], "trace_id": page["trace_id"], "task_id": page["task_id"],
        "url": page["url"], "final_url": page["final_url"], "domain": page["domain"], "outcome": "ok",
        "status": page["status"], "latency_ms": 5, "bytes": len(page["body"]), "attempt": 1,
        "fetched_at": page["fetched_at"], "retry_after_s": None, "detail": "", "fetcher_id": "test",
        "conditional": False, "api_credits": 0.0,
    }  # fmt: skip


def hand_off(settings: Settings, pages: list[Mapping[str, Any]]) -> None:
    """Send each page (claim-checking large bodies) with its event; return once Kafka confirmed all."""
    outputs = KafkaOutputs(settings)

    async def send_all() -> None:
        for page in pages:
            await outputs.send(page, fetch_event(page))

    try:
        asyncio.run(send_all())
    finally:
        outputs.close(10)
