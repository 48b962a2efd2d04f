"""Errors of the AMQP plumbing; every message names the input that was wrong and what to do."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class ControlPlaneError(DualplaneError):
    """Base class of the AMQP plumbing's errors."""


class MessageRejected(ControlPlaneError):
    """A control message that can never be handled (malformed, unknown version, invalid fields).

    The consumer dead-letters it at once with ``reason``; retrying would not help.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
