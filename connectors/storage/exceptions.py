"""Errors of the connectors; each message names the object and says what to do about it."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class ConnectorError(DualplaneError):
    """Base class of connector errors."""


class ClaimCheckError(ConnectorError):
    """Base class of claim-check errors: a body that could not be stored or read back."""


class ClaimCheckMissing(ClaimCheckError):
    """The reference names no object (deleted, expired, another bucket): permanent, dead-letter it."""


class ClaimCheckInvalid(ClaimCheckError):
    """The reference is malformed or the object's bytes do not match their SHA-256: permanent."""


class ClaimCheckTooLarge(ClaimCheckError):
    """The stored body is larger than the reader accepts; it was not downloaded."""

    def __init__(self, uri: str, size_bytes: int, max_bytes: int) -> None:
        super().__init__(f"{uri} holds {size_bytes} bytes, more than the {max_bytes} accepted")
        self.size_bytes = size_bytes


class ClaimCheckUnavailable(ClaimCheckError):
    """The store did not answer or refused for now (network, 5xx, throttling, credentials): retry later.

    Never a reason to dead-letter a page: the object may well be there once S3 answers again.
    """
