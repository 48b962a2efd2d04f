"""The processor's snapshot for ``dualplane throttle show``: one JSON document, written atomically.

Shape (``version`` 1)::

    {"version": 1, "generated_at": ISO-8601, "app_id": ..., "host": ..., "pid": ...,
     "window": {"size_s": 600, "step_s": 60}, "policy": {"threshold": 0.05, "min_samples": 20, ...},
     "ready": true,                         # tables recovered; false while a rebalance recovers
     "partitions": [0, 1, ...],            # fetch.events partitions this worker owns
     "offsets": {"0": 41, ...},            # per owned partition, the last offset this worker handled
     "quota": {"paused_until_s": epoch, "reason": ""} | null,   # the last fleet-wide pause (quota, budget)
     "credits": {"day": "2026-11-28", "used": 120.0, "budget": 5000 | null, "left": 4880.0 | null,
                 "paused": false},     # the scraping API's credits today (UTC), as this worker counted
     "stats": {"events": n, "bad_events": n, "stale_events": n, "errors": n, "commands": n,
               "publisher": {"published": n, "failures": n, "pending": n, "last_error": ""}},
     "domains": {"example.com": {
         "concurrency": 4, "delay_ms": 2130, "paused": false,
         "healthy_windows": 0, "extreme_windows": 0, "last_change_s": epoch,
         "rate_rps": 1.8 | null, "limit_rps": 2.1 | null, "latency_ms_baseline": 80.0 | null,
         "window": {"start_s", "end_s", "total", "blocked", "timeouts", "server_errors",
                    "blocked_ratio", "latency_ms_avg", "latency_ms_max", "max_retry_after_s"} | null,
         "evaluated_at_s": epoch | null,
         "last_command": {ThrottleCommand fields, JSON} | null}}}

``window`` is the window the policy judged at ``evaluated_at_s`` (null for a domain not seen since
this worker started); ``last_command.reason`` says why the limits are what they are.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dualplane.data_plane.throttle.exceptions import ThrottleError

VERSION = 1


def write_snapshot(path: Path, snapshot: Mapping[str, Any]) -> None:
    """Replace ``path`` with ``snapshot`` atomically: a reader sees the old or the new file, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            json.dump(snapshot, tmp, separators=(",", ":"), sort_keys=True)
        Path(tmp_name).replace(path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def read_snapshot(path: Path) -> dict[str, Any]:
    """The snapshot at ``path``; :class:`ThrottleError` with what to do when there is none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ThrottleError(
            f"no throttle snapshot at {path}; start the processor (`dualplane run throttle`) or point "
            "DUALPLANE_THROTTLE_SNAPSHOT_PATH at the file it writes"
        ) from error
    except (OSError, ValueError) as error:
        raise ThrottleError(f"unreadable throttle snapshot {path}: {error}") from error
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ThrottleError(f"{path} is not a version-{VERSION} throttle snapshot; upgrade dualplane")
    return data
