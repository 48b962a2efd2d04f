"""Base error of the dualplane shell; every message says what was wrong and how to fix it."""

from __future__ import annotations


class DualplaneError(Exception):
    """Base class for errors the CLI reports as one readable line (exit code 1)."""
