"""Errors of the S3 sink: permanent (stop, say what to fix), passing (retry) or one record's fault."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class SinkError(DualplaneError):
    """Base class of sink errors."""


class SinkMisconfigured(SinkError):
    """No retry will help: a missing bucket, refused credentials, no permission. It names the setting."""


class SinkUnavailable(SinkError):
    """S3 (or the schema registry) did not answer or failed for now: nothing is committed, retry from the
    committed offsets after a back-off."""


class Unwritable(SinkError):
    """This one record cannot be archived (undecodable, a claim check naming nothing or other bytes): it goes
    to the dead letters with this message as the reason, and the sink goes on."""


class KeyTaken(SinkError):
    """An object already holds the key a file was to be created under (written before a crash, or by a
    zombie instance): the sink adopts that object instead of overwriting it."""

    def __init__(self, key: str) -> None:
        super().__init__(f"an object already exists at {key}")
        self.key = key
