"""Optional dependencies: what only a developer's machine needs comes with ``dualplane[local]``.

The local stack's S3 endpoint (moto's server), the sample site's report page (jinja2) and its charts
(matplotlib) are not needed by a deployment of the services, so ``pip install dualplane`` leaves them
out. Code that needs one asks :func:`require` first, and a user without the extra gets one line naming
it, not a traceback.
"""

from __future__ import annotations

import importlib

from dualplane.core.exceptions import DualplaneError

LOCAL = "local"


class ExtraMissing(DualplaneError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def require(module: str, needed_by: str, extra: str = LOCAL) -> None:
    """Import ``module``, or raise :class:`ExtraMissing` saying that ``needed_by`` needs ``extra``."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        raise ExtraMissing(
            f"{needed_by} needs {module.partition('.')[0]} ({error}): install the extra with "
            f"`pip install 'dualplane[{extra}]'` (`make setup` does)"
        ) from None
