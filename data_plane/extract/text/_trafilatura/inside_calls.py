"""A switch that is on only within a block of our own calls, in this thread or task.

Each of our trafilatura shortcuts (:mod:`~data_plane.extract.text._trafilatura.readability_skip`,
:mod:`~data_plane.extract.text._trafilatura.xpaths`, :mod:`~data_plane.extract.text._trafilatura.parser`)
replaces a name inside trafilatura for the whole process, but acts only while its switch is on: inside
``text._trafilatura_text``. Any other caller of trafilatura in the process gets trafilatura's own code.
One switch per shortcut, so that ``benchmarks/trafilatura_shortcuts.py`` can leave one off.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator


class Switch:
    """Off by default; on within :meth:`within` (a context variable: threads and tasks do not share it)."""

    def __init__(self, name: str) -> None:
        self._on: contextvars.ContextVar[bool] = contextvars.ContextVar(name, default=False)

    @property
    def on(self) -> bool:
        return self._on.get()

    @contextlib.contextmanager
    def within(self) -> Iterator[None]:
        token = self._on.set(True)
        try:
            yield
        finally:
            self._on.reset(token)
