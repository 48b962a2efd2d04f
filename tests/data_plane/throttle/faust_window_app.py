"""A tiny Faust app for the smoke test: counts events per key in a tumbling window.

Configured from the environment by the test that runs it as a worker process; answers
``GET /count/{key}/`` with the current window's count read from the table.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import faust

app = faust.App(
    os.environ["SMOKE_APP_ID"],
    broker=f"kafka://{os.environ['SMOKE_BOOTSTRAP']}",
    store="memory://",
    topic_partitions=1,
    topic_replication_factor=1,
    web_bind="127.0.0.1",
    web_port=int(os.environ["SMOKE_WEB_PORT"]),
    web_in_thread=False,
)
events = app.topic(os.environ["SMOKE_TOPIC"], key_type=bytes, value_type=bytes, partitions=1)
counts = app.Table("counts", default=int, partitions=1).tumbling(
    timedelta(hours=1), expires=timedelta(hours=2)
)


@app.agent(events)
async def count_events(stream: Any) -> None:
    async for key, _value in stream.items():
        counts[key.decode()] += 1


@app.page("/count/{key}/")
async def count_page(web: Any, request: Any, key: str) -> Any:
    return web.json({"key": key, "count": counts[key].now()})
