"""Choosing the wire format, Confluent framing edge cases, how registry failures read (no registry needed)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from fastavro import schemaless_writer

from dualplane import schemas
from dualplane.core.settings import SchemaRegistrySettings, Settings
from dualplane.namespaces import private_namespace
from dualplane.schemas.codec import set_default_resolver
from dualplane.schemas.confluent import ConfluentRegistry, subject_for
from dualplane.schemas.exceptions import (
    CorruptRecord,
    IncompatibleSchema,
    RegistryError,
    RegistryUnavailable,
    SchemaError,
    SchemaRejected,
    UnknownSchema,
)
from dualplane.schemas.serde import codec_for, install
from dualplane.schemas.wire import CONFLUENT_HEADER_BYTES, confluent_header, split
from tests.schemas.test_codec import page_record, throttle_command

pytestmark = pytest.mark.unit

CLOSED_URL = "http://127.0.0.1:9"  # discard port: nothing listens, and nothing is asked here anyway


def confluent(schema_id: int, name: str, version: int, record: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    schemaless_writer(body, schemas.default_registry().get(name, version).parsed, record)
    return confluent_header(schema_id) + body.getvalue()


def page_record_v1(schema_id: int) -> str:
    assert schema_id == 7
    return schemas.default_registry().get("page_record", 1).schema_json()


@pytest.fixture
def no_default_resolver() -> Iterator[None]:
    yield
    set_default_resolver(None)


class TestCodecFor:
    def test_without_a_registry_url_it_writes_single_object_encoding(self) -> None:
        codec = codec_for(Settings())

        assert (codec.wire_format, codec.registry, codec.resolve_id) == ("single-object", None, None)
        assert codec.encode("page_record", page_record(2)) == schemas.encode("page_record", page_record(2))
        assert repr(codec) == "Codec(single-object)"

    def test_with_a_registry_url_it_writes_confluent_frames_and_asks_nothing_yet(self) -> None:
        settings = Settings(schema_registry=SchemaRegistrySettings(url=CLOSED_URL))

        codec = codec_for(settings)

        assert codec.wire_format == "confluent"
        assert repr(codec) == f"Codec(confluent at {CLOSED_URL})"

    def test_subjects_follow_the_topics_the_manifest_routes_to(self) -> None:
        settings = private_namespace(Settings(), "t-1", data_dir=Settings().stack.data_dir)
        codec = codec_for(settings)

        assert codec.topic_for("page_record", 2) == "t-1.records"
        assert subject_for(codec.topic_for("fetch_event", 1)) == "t-1.fetch.events-value"

    def test_both_wire_formats_decode_through_a_registry_codec(self) -> None:
        codec = codec_for(Settings())
        registry = ConfluentRegistry(_Client(schemas={7: page_record_v1(7)}), CLOSED_URL)
        with_registry = type(codec)(codec.topics, registry)

        framed = with_registry.decode(confluent(7, "page_record", 1, page_record(1)), reader_version=2)
        plain = with_registry.decode(schemas.encode("page_record", page_record(1), 1), reader_version=2)

        assert framed.record == plain.record
        assert (framed.writer_version, framed.writer_fingerprint) == (
            1,
            schemas.fingerprint("page_record", 1),
        )


class TestProcessDefaultResolver:
    def test_install_lets_plain_decode_read_confluent_frames(self, no_default_resolver: None) -> None:
        data = confluent(7, "page_record", 1, page_record(1))
        with pytest.raises(UnknownSchema, match="DUALPLANE_SCHEMA_REGISTRY_URL"):
            schemas.decode(data)

        set_default_resolver(page_record_v1)

        assert schemas.decode(data).record == page_record(1)

    def test_install_without_a_registry_leaves_confluent_frames_unreadable(
        self, no_default_resolver: None
    ) -> None:
        set_default_resolver(page_record_v1)

        install(Settings())

        with pytest.raises(UnknownSchema):
            schemas.decode(confluent(7, "page_record", 1, page_record(1)))


class TestConfluentFraming:
    def test_the_id_is_four_big_endian_bytes_up_to_the_largest(self) -> None:
        frame = split(confluent_header(0xFFFFFFFF) + b"\x02a")

        assert (frame.schema_id, frame.fingerprint, frame.body_offset) == (
            0xFFFFFFFF,
            None,
            CONFLUENT_HEADER_BYTES,
        )

    def test_a_header_without_a_body_is_a_corrupt_record(self) -> None:
        with pytest.raises(CorruptRecord, match="0-byte body is not valid page_record v1"):
            schemas.decode(confluent_header(7), resolve_id=page_record_v1)

    def test_truncated_and_padded_bodies_are_corrupt_records(self) -> None:
        data = confluent(7, "page_record", 1, page_record(1))

        with pytest.raises(CorruptRecord, match="not valid page_record v1"):
            schemas.decode(data[:-3], resolve_id=page_record_v1)
        with pytest.raises(CorruptRecord, match="1 unexpected trailing bytes"):
            schemas.decode(data + b"\x00", resolve_id=page_record_v1)

    def test_a_registry_schema_that_is_not_avro_json_is_a_schema_error(self) -> None:
        with pytest.raises(SchemaError, match="not valid Avro"):
            schemas.decode(confluent_header(7) + b"\x02a", resolve_id=lambda _id: "<html>")

    def test_the_resolvers_own_errors_pass_through_unchanged(self) -> None:
        def down(_id: int) -> str:
            raise RegistryUnavailable("registry down")

        with pytest.raises(RegistryUnavailable, match="registry down"):
            schemas.decode(confluent(7, "page_record", 1, page_record(1)), resolve_id=down)

    def test_a_registry_writer_of_another_record_decodes_as_that_record(self) -> None:
        text = schemas.default_registry().get("throttle_command", 1).schema_json()

        decoded = schemas.decode(
            confluent(3, "throttle_command", 1, throttle_command()), resolve_id=lambda _: text
        )

        assert (decoded.name, decoded.version, decoded.record) == ("throttle_command", 1, throttle_command())


class _Client:
    """Answers like a registry client from canned schemas, or raises ``error`` for every request."""

    def __init__(
        self, schemas: dict[int, str] | None = None, error: Exception | None = None, level: str | None = None
    ) -> None:
        self.schemas, self.error, self.level = schemas or {}, error, level
        self.levels_set: list[tuple[str, str]] = []

    def get_schema(self, schema_id: int) -> Any:
        if self.error is not None:
            raise self.error
        return Schema(self.schemas[schema_id], "AVRO")

    def get_compatibility(self, subject_name: str) -> str:
        if self.error is None and self.level is not None:
            return self.level
        raise self.error or SchemaRegistryError(404, 40408, "no subject-level compatibility")

    def set_compatibility(self, subject_name: str, level: str) -> str:
        if self.error is not None:
            raise self.error
        self.levels_set.append((subject_name, level))
        return level


def _refusing(status: int, message: str = "refused", *, auto_register: bool = True) -> ConfluentRegistry:
    error = SchemaRegistryError(status, status * 100 + 1, message)
    return ConfluentRegistry(_Client(error=error), CLOSED_URL, auto_register=auto_register)


class TestRegistryFailures:
    def test_no_answer_is_unavailable_and_says_how_to_fix_it(self) -> None:
        # A real client that gives up fast: no answer must not take long to report.
        client = SchemaRegistryClient({"url": CLOSED_URL, "timeout": 1, "max.retries": 0})
        registry = ConfluentRegistry(client, CLOSED_URL)

        with pytest.raises(RegistryUnavailable) as raised:
            registry.schema_text(7)

        message = str(raised.value)
        assert CLOSED_URL in message and "fetching the writer schema of id 7" in message
        assert "DUALPLANE_SCHEMA_REGISTRY_URL" in message

    def test_a_server_error_is_unavailable(self) -> None:
        with pytest.raises(RegistryUnavailable, match="did not answer"):
            _refusing(503).schema_text(7)

    def test_an_unknown_id_is_an_unknown_schema(self) -> None:
        with pytest.raises(UnknownSchema, match="does not know that id"):
            _refusing(404, "Schema 7 not found").schema_text(7)

    def test_refused_credentials_name_the_setting(self) -> None:
        with pytest.raises(RegistryError, match="DUALPLANE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO"):
            _refusing(401).require_backward("records-value")

    def test_an_incompatible_version_is_rejected_with_the_evolution_rule(self) -> None:
        error = SchemaRegistryError(409, 409, "Schema being registered is incompatible")
        failure = ConfluentRegistry(_Client(), CLOSED_URL)._failure(error, "registering page_record v3")

        assert isinstance(failure, SchemaRejected)
        assert isinstance(failure, IncompatibleSchema) and isinstance(failure, RegistryError)
        assert "manifest.json" in str(failure)

    @pytest.mark.parametrize(
        ("level", "expected_sets"),
        [
            (None, [("records-value", "BACKWARD")]),  # no level of its own (the registry answers 404)
            ("NONE", [("records-value", "BACKWARD")]),
            ("FORWARD", [("records-value", "BACKWARD")]),
            ("BACKWARD", []),
            ("BACKWARD_TRANSITIVE", []),
            ("FULL", []),
            ("FULL_TRANSITIVE", []),
        ],
    )
    def test_a_subject_gets_backward_unless_its_level_includes_it(
        self, level: str | None, expected_sets: list[tuple[str, str]]
    ) -> None:
        client = _Client(level=level)

        result = ConfluentRegistry(client, CLOSED_URL).require_backward("records-value")

        assert client.levels_set == expected_sets
        assert result == (level if not expected_sets else "BACKWARD")

    def test_settings_read_the_url_and_mask_the_credentials(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("DUALPLANE_SCHEMA_REGISTRY_URL", "http://sr:s3cret@127.0.0.1:8081")
        monkeypatch.setenv("DUALPLANE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO", "user:hunter2")

        settings = Settings.from_env()
        shown = str(settings.masked()["schema_registry"])

        assert settings.schema_registry.url == "http://sr:s3cret@127.0.0.1:8081"
        assert "s3cret" not in shown and "hunter2" not in shown
        assert settings.to_env()["DUALPLANE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO"] == "user:hunter2"
