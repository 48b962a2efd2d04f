"""Errors of the throttle processor and its readers; each names the bad input and what to do."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class ThrottleError(DualplaneError):
    """Base class of throttle errors."""


class InvalidThrottleConfig(ThrottleError):
    """A ``DUALPLANE_THROTTLE_*`` variable that cannot be used; the message names it and why."""


class BadFetchEvent(ThrottleError):
    """A ``fetch.events`` value that is not a usable fetch event; the processor counts and skips it."""


class BadThrottleCommand(ThrottleError):
    """A throttle command body (JSON or Avro) that cannot be read; listeners skip it."""


class ChangelogWriteFailed(ThrottleError):
    """A table changelog write Kafka did not take; the processor must not commit offsets past it."""
