"""Old flag names kept for one release: they still work, and say once what replaced them."""

from __future__ import annotations

from dualplane.cli.output import stderr


def warn_renamed(old: str, new: str) -> None:
    """One line on stderr: ``old`` still works this release; scripts should move to ``new``."""
    stderr.print(
        f"[yellow]warning:[/yellow] {old} is deprecated and goes in the next release; use {new}",
        soft_wrap=True,
        highlight=False,
    )
