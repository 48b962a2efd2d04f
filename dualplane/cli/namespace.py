"""``--namespace NAME``: the topics and queues of a namespace instead of the default ones.

``dualplane demo`` crawls in the namespace ``demo``; every command that touches topics or queues
reads it with ``--namespace demo``, or from ``DUALPLANE_NAMESPACE=demo`` in the environment (see
:func:`dualplane.namespaces.named_namespace`). An empty value means the default topics and queues.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # imported when a command runs, so that `--help` starts fast
    from dualplane.core.settings import Settings

NAMESPACE_ENV = "DUALPLANE_NAMESPACE"
NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        envvar=NAMESPACE_ENV,
        help="Use the topics and queues of this namespace (the demo's: demo); default $DUALPLANE_NAMESPACE.",
        show_default=False,
    ),
]


def settings_in(namespace: str | None) -> Settings:
    """The settings from the environment, moved into ``namespace`` when one is given."""
    from dualplane.core.settings import Settings
    from dualplane.namespaces import named_namespace

    settings = Settings.from_env()
    if not namespace:
        return settings
    try:
        return named_namespace(settings, namespace)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--namespace") from None
