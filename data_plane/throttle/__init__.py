"""Adaptive throttling: a Faust processor turns fetch-event block ratios into per-domain throttle commands.

Its face (what callers import, each name loaded on first use, see :mod:`core.faces`): the fleet's
view of the limits, throttle commands and overrides (``dualplane throttle``), the processor's
snapshot, and the errors they raise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dualplane.core.faces import lazy_faces

if TYPE_CHECKING:
    from dualplane.data_plane.throttle.commands import ALL_DOMAINS, OPERATOR, ThrottleCommand
    from dualplane.data_plane.throttle.exceptions import BadThrottleCommand, ThrottleError
    from dualplane.data_plane.throttle.overrides import (
        clearing as clearing_override,
    )
    from dualplane.data_plane.throttle.overrides import (
        issue as issue_override,
    )
    from dualplane.data_plane.throttle.overrides import (
        latest_state as latest_overrides,
    )
    from dualplane.data_plane.throttle.snapshot import read_snapshot
    from dualplane.data_plane.throttle.view import ThrottleView

__all__ = [
    "ALL_DOMAINS",
    "OPERATOR",
    "BadThrottleCommand",
    "ThrottleCommand",
    "ThrottleError",
    "ThrottleView",
    "clearing_override",
    "issue_override",
    "latest_overrides",
    "read_snapshot",
]
FACES = {
    "ALL_DOMAINS": "commands",
    "BadThrottleCommand": "exceptions",
    "OPERATOR": "commands",
    "ThrottleCommand": "commands",
    "ThrottleError": "exceptions",
    "ThrottleView": "view",
    "clearing_override": "overrides:clearing",
    "issue_override": "overrides:issue",
    "latest_overrides": "overrides:latest_state",
    "read_snapshot": "snapshot",
}
__getattr__ = lazy_faces(__name__, FACES)
