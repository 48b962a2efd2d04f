"""Base error of the dualplane shell; every message says what was wrong and how to fix it."""

from __future__ import annotations


class DualplaneError(Exception):
    """Base class for errors the CLI reports as one readable line (exit code 1)."""


class ConfigurationError(DualplaneError):
    """A setting that parses but cannot be used here (an uninstalled plugin, an unknown schema
    version): the CLI reports it as ``invalid configuration: …`` with exit code 2, like a usage error."""
