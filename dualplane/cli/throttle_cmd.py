"""``dualplane throttle show``: per-domain limits and block ratios from the throttle processor."""

from __future__ import annotations

import time
from datetime import datetime

import typer

from data_plane.throttle.config import ThrottleConfig
from data_plane.throttle.snapshot import read_snapshot
from dualplane.cli.output import JsonOption, print_json, stdout, table
from dualplane.exceptions import DualplaneError
from dualplane.settings import Settings

app = typer.Typer(help="Adaptive throttling: what the block-ratio processor decided per domain, and why.")

STALE_AFTER_S = 10


@app.command("show")
def show(as_json: JsonOption = False) -> None:
    """Per domain: P_d, delay, pause, the window's counts and block ratio, the last command and why."""
    settings = Settings.from_env()
    path = ThrottleConfig.from_env(settings).snapshot_path
    if path is None or not path.exists():
        raise DualplaneError(
            f"no throttle snapshot at {path}: start the processor with `dualplane run throttle`"
        )
    snapshot = read_snapshot(path)
    if as_json:
        print_json(snapshot)
        return
    generated = snapshot.get("generated_at")
    age_s = time.time() - datetime.fromisoformat(generated).timestamp() if generated else 0.0
    rows = []
    for domain, state in sorted(snapshot.get("domains", {}).items()):
        window = state.get("window") or {}
        last = (state.get("last_command") or {}).get("reason", "")
        counts = f"{window.get('blocked', 0)}/{window.get('total', 0)}"
        ratio = f"{window.get('blocked_ratio', 0):.1%}"
        limits = [str(state.get("concurrency")), f"{state.get('delay_ms')} ms", str(state.get("paused"))]
        rows.append([domain, *limits, counts, ratio, last])
    title = "throttle" + (
        f" (snapshot {age_s:.0f} s old: is the processor running?)" if age_s > STALE_AFTER_S else ""
    )
    stdout.print(table(title, ["domain", "P_d", "delay", "paused", "blocked", "ratio", "last command"], rows))
