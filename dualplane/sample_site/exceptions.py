"""Errors of the sample site."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class SampleSiteError(DualplaneError):
    """The sample site was misconfigured, could not bind its ports, or was used before it started."""
