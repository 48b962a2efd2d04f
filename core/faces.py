"""A stage package's face: the names its callers use, each loaded from its module on first use.

A stage package (``control_plane.frontier``, ``data_plane.extractor``…) lists what the shell, the
demo, benchmarks and downstream code may import from it, and nothing else. The names load on first
use (PEP 562), so ``dualplane status`` importing the frontier's progress reader loads no AMQP or
robots machinery, as when it imported the module itself. The package also names them under
``TYPE_CHECKING`` for type checkers; a test checks that the two lists agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_faces(package: str, faces: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that loads each name of ``faces`` on first use:
    name -> the module of the package that defines it, or ``module:attribute`` where the face
    renames it (``put_profile`` for ``profile_store.put``)."""

    def __getattr__(name: str) -> Any:
        where = faces.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        return getattr(importlib.import_module(f"{package}.{module}"), attribute or name)

    return __getattr__
