"""Errors of the seed source; each names the list and what to do about it."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class SeedListError(DualplaneError):
    """A seed list that cannot be read at all (missing, forbidden, unreachable); bad lines are not errors."""
