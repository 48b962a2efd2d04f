"""Confluent Schema Registry mode: values framed as magic byte 0 + registry id, through a real registry.

Encoding goes through confluent-kafka's ``AvroSerializer``; decoding resolves a writer id to its
schema text with :meth:`ConfluentRegistry.schema_text` (fetched once, then cached by the client).

Subjects follow TopicNameStrategy, ``<topic>-value``: one subject holds every version of the payload
one topic carries, so the registry checks each new version against the earlier ones. Our evolution
rule (a version reads data written by the one before; a breaking version moves to its own topic, so
its own subject) is the registry's BACKWARD compatibility. Before a producer first registers under a
subject it makes the subject's level include BACKWARD (``BACKWARD``, ``BACKWARD_TRANSITIVE``,
``FULL`` and ``FULL_TRANSITIVE`` are kept; anything else is set to ``BACKWARD``, with a warning).

Registration (``DUALPLANE_SCHEMA_REGISTRY_AUTO_REGISTER``, default on): the serializer registers the
version a producer writes the first time it writes to a subject. Registering a schema the subject
already holds returns its id, so every producer of the fleet may do it; a version the registry finds
incompatible fails that first write with :class:`SchemaRejected`, before any reader sees it.
Off, the serializer only looks the schema up: an administrator registers versions beforehand and
producers need read access only.

Settings read: ``DUALPLANE_SCHEMA_REGISTRY_*`` (:class:`~core.settings.SchemaRegistrySettings`).
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient, SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from dualplane.core.settings import SchemaRegistrySettings, mask_url_password
from dualplane.schemas.codec import describe_invalid
from dualplane.schemas.exceptions import (
    InvalidRecord,
    RegistryError,
    RegistryUnavailable,
    SchemaError,
    SchemaRejected,
    UnknownSchema,
)
from dualplane.schemas.registry import RegisteredSchema

log = logging.getLogger(__name__)

BACKWARD = "BACKWARD"
INCLUDES_BACKWARD = frozenset({"BACKWARD", "BACKWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"})
# A registry that does not answer should surface within seconds: the caller retries the whole message.
MAX_RETRIES = 2
RETRY_WAIT_MS = 200
NOT_FOUND = 404
CONFLICT = 409
UNPROCESSABLE = 422
SERVER_ERRORS = 500


def _transport_errors() -> tuple[type[Exception], ...]:
    """Network-level errors of whichever httpx the registry client uses (httpx2 when installed)."""
    found: list[type[Exception]] = []
    for module in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(module).TransportError)
        except ImportError:
            continue
    return tuple(found)


# What a registry request raises: the registry's answer, or no answer at all.
REQUEST_ERRORS: tuple[type[Exception], ...] = (SchemaRegistryError, *_transport_errors())


def subject_for(topic: str) -> str:
    """The TopicNameStrategy subject of a topic's values."""
    return f"{topic}-{MessageField.VALUE}"


class ConfluentRegistry:
    """One registry over HTTP: registers and encodes our schema versions, resolves writer ids.

    Safe to share between threads; serializers are built once per schema version and topic.
    """

    def __init__(self, client: SchemaRegistryClient, url: str, *, auto_register: bool = True) -> None:
        self.client = client
        self.url = url  # for messages only: any password already masked
        self.auto_register = auto_register
        self._serializers: dict[tuple[int, str], AvroSerializer] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: SchemaRegistrySettings) -> ConfluentRegistry:
        """A client of ``DUALPLANE_SCHEMA_REGISTRY_URL``; :class:`RegistryError` when it is unset."""
        if not settings.url:
            raise RegistryError("Schema Registry mode needs DUALPLANE_SCHEMA_REGISTRY_URL (the registry)")
        config: dict[str, Any] = {
            "url": settings.url,
            "timeout": settings.timeout_s,
            "max.retries": MAX_RETRIES,
            "retries.wait.ms": RETRY_WAIT_MS,
        }
        if settings.basic_auth_user_info is not None:
            config["basic.auth.user.info"] = settings.basic_auth_user_info.get_secret_value()
        url = mask_url_password(settings.url)
        return cls(SchemaRegistryClient(config), url, auto_register=settings.auto_register)

    def encode(self, schema: RegisteredSchema, record: Mapping[str, Any], topic: str) -> bytes:
        """``record`` as ``schema``, framed with the id the registry gives it under ``topic``'s subject.

        :class:`InvalidRecord` when the record does not match; :class:`RegistryUnavailable`,
        :class:`SchemaRejected` or :class:`RegistryError` when registering or looking up fails.
        """
        serializer = self._serializer(schema, topic)
        try:
            data = serializer(dict(record), SerializationContext(topic, MessageField.VALUE))
        except REQUEST_ERRORS as error:
            doing = f"{'registering' if self.auto_register else 'looking up'} {_label(schema)}"
            raise self._failure(error, f"{doing} under subject {subject_for(topic)!r}") from error
        except Exception as error:  # fastavro raises ValueError, TypeError, AttributeError... on bad input
            reason = describe_invalid(schema, record, error)
            raise InvalidRecord(f"record does not match {_label(schema)}: {reason}") from error
        if data is None:  # the serializer returns None only for a None record
            raise InvalidRecord(f"no record given to encode as {_label(schema)}")
        return data

    def schema_text(self, schema_id: int) -> str:
        """The JSON of the schema the registry knows as ``schema_id``: a :data:`~schemas.codec.ResolveId`."""
        doing = f"fetching the writer schema of id {schema_id}"
        try:
            schema = self.client.get_schema(schema_id)
        except REQUEST_ERRORS as error:
            if isinstance(error, SchemaRegistryError) and error.http_status_code == NOT_FOUND:
                raise UnknownSchema(
                    f"the schema registry at {self.url}, {doing}, does not know that id "
                    f"({error.error_message}): the message was written against another registry, or its "
                    "schema was deleted; point DUALPLANE_SCHEMA_REGISTRY_URL at the producers' registry"
                ) from error
            raise self._failure(error, doing) from error
        if (schema.schema_type or "AVRO") != "AVRO" or not schema.schema_str:
            raise UnknownSchema(
                f"schema id {schema_id} in the registry at {self.url} is a {schema.schema_type} schema, "
                "not Avro; this message was not written by a dualplane Avro producer"
            )
        return schema.schema_str

    def require_backward(self, subject: str) -> str:
        """Make ``subject``'s compatibility level include BACKWARD (our evolution rule); return the level."""
        try:
            level = self._level(subject)
            if level in INCLUDES_BACKWARD:
                return level
            if level is not None:
                log.warning("subject %r had compatibility %s; setting %s, dualplane's evolution rule",
                            subject, level, BACKWARD)  # fmt: skip
            self.client.set_compatibility(subject_name=subject, level=BACKWARD)
        except REQUEST_ERRORS as error:
            raise self._failure(error, f"setting {BACKWARD} compatibility on subject {subject!r}") from error
        return BACKWARD

    def _level(self, subject: str) -> str | None:
        """The subject's level; ``None`` when it has none of its own (registries answer 404 then)."""
        try:
            return str(self.client.get_compatibility(subject_name=subject)).upper()
        except SchemaRegistryError as error:
            if error.http_status_code == NOT_FOUND:
                return None
            raise

    def _serializer(self, schema: RegisteredSchema, topic: str) -> AvroSerializer:
        key = (schema.fingerprint, topic)
        serializer = self._serializers.get(key)
        if serializer is None:
            with self._lock:
                serializer = self._serializers.get(key)
                if serializer is None:
                    if self.auto_register:
                        self.require_backward(subject_for(topic))
                    conf = self._serializer_conf()
                    serializer = AvroSerializer(self.client, schema.schema_json(), conf=conf)
                    self._serializers[key] = serializer
        return serializer

    def _serializer_conf(self) -> dict[str, Any]:
        # Strict like schemas.encode: an unknown field is an error, a missing one takes its default.
        return {
            "auto.register.schemas": self.auto_register,
            "validate.strict": True,
            "validate.strict.allow.default": True,
        }

    def _failure(self, error: Exception, doing: str) -> SchemaError:
        """The error to raise for a failed registry request: what failed, where, and what to do."""
        where = f"the schema registry at {self.url}, {doing}"
        if not isinstance(error, SchemaRegistryError) or error.http_status_code >= SERVER_ERRORS:
            return RegistryUnavailable(
                f"{where}, did not answer ({error}). Start the registry or correct "
                "DUALPLANE_SCHEMA_REGISTRY_URL; unset it to write self-describing single-object Avro instead"
            )
        status, detail = error.http_status_code, f"{error.http_status_code} {error.error_message}"
        if status == CONFLICT:
            return SchemaRejected(
                f"{where}, refused the schema as not BACKWARD compatible with the subject's earlier "
                f"versions ({detail}). A new version must read data written by the previous one (give "
                "new fields defaults), or be listed as a breaking version with its own topic in "
                "schemas/avro/manifest.json"
            )
        if status in (401, 403):
            return RegistryError(
                f"{where}, refused our credentials ({detail}); set "
                "DUALPLANE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO=user:password"
            )
        if status == NOT_FOUND and not self.auto_register:
            return RegistryError(
                f"{where}, does not hold that schema ({detail}): register it first, or set "
                "DUALPLANE_SCHEMA_REGISTRY_AUTO_REGISTER=true to let producers register what they write"
            )
        hint = " (an invalid schema)" if status == UNPROCESSABLE else ""
        return RegistryError(f"{where}, failed{hint}: {detail}")


def _label(schema: RegisteredSchema) -> str:
    return f"{schema.name} v{schema.version}"
