"""``dualplane config show``: the effective settings, secrets masked."""

from __future__ import annotations

import typer

from dualplane.cli.output import JsonOption, print_json, stdout, table
from dualplane.core.settings import ENV_PREFIX, Settings

app = typer.Typer(help="Inspect the effective settings (DUALPLANE_* environment variables).")


@app.command("show")
def show(as_json: JsonOption = False) -> None:
    """Print every setting with its value and environment variable; secrets are masked."""
    masked = Settings.from_env().masked()
    if as_json:
        print_json(masked)
        return
    rows = []
    for section_name, section in masked.items():
        prefix = type(getattr(Settings.from_env(), section_name)).model_config.get("env_prefix", ENV_PREFIX)
        rows += [[f"{prefix}{key}".upper(), str(value)] for key, value in section.items()]
    stdout.print(table("dualplane settings", ["environment variable", "value"], rows))
