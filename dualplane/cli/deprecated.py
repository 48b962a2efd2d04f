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


def renamed_value(
    new: float, old: float | None, old_name: str, new_name: str, *, old_unit_s: float = 1
) -> float:
    """The value of the new option, or of its old name if one was given (``old_unit_s``: seconds in
    one of the old option's units, 0.001 for a ``-ms`` flag), with the warning."""
    if old is None:
        return new
    warn_renamed(old_name, new_name)
    return old * old_unit_s
