"""Errors of the schemas package; every message names the schema or bytes that were wrong and what to do."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class SchemaError(DualplaneError):
    """Base class of schema, encoding and schema-topic errors."""


class ManifestError(SchemaError):
    """The packaged manifest and the ``.avsc`` files disagree, or one of them is malformed."""


class UnknownSchema(SchemaError):
    """A schema this process does not know: an unknown name, version, fingerprint or registry id.

    ``fingerprint`` is the writer's CRC-64-AVRO fingerprint when the lookup was by fingerprint.
    """

    def __init__(self, message: str, *, fingerprint: int | None = None) -> None:
        super().__init__(message)
        self.fingerprint = fingerprint


class SchemaConflict(SchemaError):
    """A name and version already registered with a different schema, or a fingerprint clash."""


class InvalidRecord(SchemaError):
    """A record handed to ``encode`` that does not match its schema; nothing was encoded."""


class CorruptRecord(SchemaError):
    """Bytes that are not a valid encoding: wrong header, truncated, or not readable with their schema.

    Consumers dead-letter such a message; retrying cannot help.
    """


class IncompatibleSchema(SchemaError):
    """Data written with one schema that the requested reader schema cannot resolve."""


class SchemaTopicError(SchemaError):
    """Publishing to, or loading from, the schema topic failed."""


class RegistryError(SchemaError):
    """The Confluent schema registry refused a request: bad credentials, an unregistered schema, a rule."""


class RegistryUnavailable(RegistryError):
    """The Confluent schema registry did not answer (down, unreachable, timing out, or failing with 5xx).

    A passing condition: callers retry later instead of dead-lettering the message they were handling.
    """


class SchemaRejected(RegistryError, IncompatibleSchema):
    """The registry refused to register a version: not compatible with the subject's earlier versions."""
