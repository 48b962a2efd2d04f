"""The frontier service: discovery in, admitted crawl tasks out (see ``service``).

``Frontier`` is imported on first use: readers of job progress (``dualplane status``, ``crawl
--wait``) import ``control_plane.frontier.progress`` without the service's AMQP and robots machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dualplane.control_plane.frontier.service import Frontier

__all__ = ["Frontier"]


def __getattr__(name: str) -> Any:
    if name == "Frontier":
        from dualplane.control_plane.frontier.service import Frontier  # noqa: PLC0415 (loaded on first use)

        return Frontier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
