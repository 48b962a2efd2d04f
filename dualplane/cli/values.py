"""Option values checked where the command line is read: one rule each, shared by every command.

Each parser applies a check of :mod:`dualplane.core.settings.checks` (the rules settings obey too)
and turns its ``ValueError`` into click's usage error, so a bad value is one line naming the option
and exit code 2 (``cli.main``), before any broker is asked. Examples of what they refuse (#34):
``monitor create --interval 99999999999999999999d`` (taken, then an SQLite integer overflow in the
frontier), ``records latest --url ''`` (matched nothing), ``crawl --timeout-s inf``. The checks are
imported when a value is parsed, not with the command, so ``--help`` stays fast (``test_lazy_cli``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import typer

T = TypeVar("T")

LOG_LEVELS = ("debug", "info", "warning", "error")


def _usage_error(check: Callable[[str], T], text: str, option: str | None = None) -> T:
    try:
        return check(text)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


def duration_s(text: str, option: str | None = None) -> int:
    """``90``, ``90s``, ``15m``, ``6h`` or ``7d`` in seconds, above 0, at most ten years."""
    from dualplane.core.settings import checks

    return _usage_error(checks.duration_s, text, option)


def seconds(text: str) -> float:
    """A finite number of seconds from 0 up to ten years (``inf`` and ``nan`` are refused)."""
    from dualplane.core.settings import checks

    def check(value_text: str) -> float:
        try:
            value = float(value_text)
        except ValueError:
            raise ValueError(f"{value_text!r} is no number of seconds; write e.g. 90 or 0.5") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{value_text!r} is no number of seconds; give a finite number from 0, e.g. 90")
        return checks.bounded_duration(value)

    return _usage_error(check, text)


_DURATION_UNITS_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}


def duration(text: str | float) -> float:
    """A duration as every command writes it: ``250ms``, ``90s``, ``1.5s``, ``15m``, ``6h``, ``7d`` (a bare
    number is seconds), in seconds: finite, from 0, at most ten years."""
    import re

    from dualplane.core.settings import checks

    if isinstance(text, int | float):  # a default, already in seconds
        return float(text)

    def check(value_text: str) -> float:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*", value_text)
        if match is None:
            raise ValueError(f"{value_text!r} is no duration; write e.g. 250ms, 90s, 15m or 6h")
        return checks.bounded_duration(float(match.group(1)) * _DURATION_UNITS_S[match.group(2) or "s"])

    return _usage_error(check, text)


def non_empty(text: str) -> str:
    """A filter, an id or a URL given on the command line: empty would match nothing, silently."""
    from dualplane.core.settings import checks

    return _usage_error(checks.non_empty, text)


def log_level(text: str) -> str:
    """``debug``, ``info``, ``warning`` or ``error``, in any case."""

    def check(value: str) -> str:
        if value.lower() not in LOG_LEVELS:
            raise ValueError(f"{value!r} is no log level; choose {', '.join(LOG_LEVELS)}")
        return value.lower()

    return _usage_error(check, text)
