"""The priority lanes of crawl tasks, apart from the message models: the topology (and ``dualplane
status`` through it) names the lane queues without building every pydantic message model."""

from __future__ import annotations

from typing import Literal

Priority = Literal["high", "normal", "bulk"]
PRIORITIES: tuple[Priority, ...] = ("high", "normal", "bulk")
