"""Errors of the embedded local stack."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class StackError(DualplaneError):
    """A local-stack service could not be installed, started, checked or stopped."""


class PrerequisiteMissing(StackError):
    """A program the stack needs (java, mvn, rabbitmq-server) is not installed; says the fix."""


class ServiceStartTimeout(StackError):
    """A service was started but did not become healthy in time; names its log file."""
