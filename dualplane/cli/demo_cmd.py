"""``dualplane demo``: bring the local stack up and prove both planes and S3 work."""

from __future__ import annotations

import typer

from dualplane.cli.output import JsonOption, mark, print_json, progress, stdout, table
from dualplane.demo import run_demo
from dualplane.settings import Settings
from dualplane.stack import LocalStack


def demo(as_json: JsonOption = False) -> None:
    """Start the embedded stack if needed, then round-trip a message through every plane."""
    settings = Settings.from_env()
    services = LocalStack(settings).up(progress)
    progress("demo", "round trips through Kafka, RabbitMQ and S3")
    results = run_demo(settings)
    ok = all(step.ok for step in results)
    if as_json:
        print_json({"ok": ok, "services": services, "round_trips": results})
    else:
        rows = [[r.plane, r.path, mark(r.ok), f"{r.latency_ms:.0f} ms", r.detail] for r in results]
        stdout.print(table("dualplane demo", ["plane", "path", "result", "latency", "detail"], rows))
        stdout.print("All planes answer." if ok else "[red]Some round trips failed; see detail.[/red]")
    if not ok:
        raise typer.Exit(1)
