"""``--namespace NAME``: the topics and queues of a namespace instead of the default ones.

``dualplane demo`` crawls in the namespace ``demo``; ``records``, ``report``, ``status`` and ``replay``
read it with ``--namespace demo`` (see :func:`dualplane.namespaces.named_namespace`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # imported when a command runs, so that `--help` starts fast
    from dualplane.core.settings import Settings

NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        help="Use the topics and queues of this namespace (the demo's: demo).",
        show_default=False,
    ),
]


def settings_in(namespace: str | None) -> Settings:
    """The settings from the environment, moved into ``namespace`` when one is given."""
    from dualplane.core.settings import Settings
    from dualplane.namespaces import named_namespace

    settings = Settings.from_env()
    if namespace is None:
        return settings
    try:
        return named_namespace(settings, namespace)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--namespace") from None
